// Worker startup CPU time, measured the way `wrangler check startup` measures it (wrangler 4.86,
// src/check/commands.ts, analyseBundle): a fresh local workerd (Miniflare) runs a wrapper Worker
// whose fetch handler does `await import("<main module>")`; the V8 CPU profiler of that isolate is
// started over the inspector before the one request and stopped after it. The bundle's whole top
// level — compiling the module, evaluating every module's global scope, `createApp()` — runs inside
// that request, which is what Cloudflare bills as startup time (limit 400 ms).
// Startup CPU = the sampled non-idle time of the profile: JS + "(program)" (V8/workerd native work:
// parsing, compiling) + "(garbage collector)". Idle samples (waiting for the request, after the
// response) are excluded. Each run is a new workerd process, so nothing is warm.
import { readFileSync } from "node:fs";
import { convertV4MiniflareOptions, Miniflare } from "miniflare";
import { WebSocket } from "undici";

type ModuleType = "ESModule" | "CommonJS" | "Text" | "Data" | "CompiledWasm";

export interface WorkerBundle {
  mainModule: string;
  compatibilityDate: string;
  compatibilityFlags: string[];
  modules: Array<{ type: ModuleType; path: string; contents: string | Uint8Array }>;
}

const MODULE_TYPES: Record<string, ModuleType> = {
  "application/javascript+module": "ESModule",
  "application/javascript": "CommonJS",
  "application/wasm": "CompiledWasm",
  "text/plain": "Text",
  "application/octet-stream": "Data",
};

/** Reads the upload form `wrangler deploy --dry-run --outfile` writes (the same file `check startup --worker` takes). */
export async function readWorkerBundle(file: string): Promise<WorkerBundle> {
  const bytes = readFileSync(file);
  const boundary = bytes.subarray(2, bytes.indexOf(10)).toString("utf8").trim();
  const form = await new Response(bytes, { headers: { "content-type": `multipart/form-data; boundary=${boundary}` } }).formData();
  const metadata = JSON.parse(String(form.get("metadata"))) as {
    main_module?: string;
    compatibility_date?: string;
    compatibility_flags?: string[];
  };
  if (!metadata.main_module) throw new Error(`${file}: not an ES modules Worker`);
  const modules: WorkerBundle["modules"] = [];
  for (const [name, value] of form.entries()) {
    if (name === "metadata" || typeof value === "string" || value.type === "application/source-map") continue;
    const type = MODULE_TYPES[value.type];
    if (!type) throw new Error(`${file}: module ${name} has an unknown type ${value.type}`);
    const data = new Uint8Array(await value.arrayBuffer());
    modules.push({
      type,
      path: name,
      contents: type === "ESModule" || type === "CommonJS" || type === "Text" ? new TextDecoder().decode(data) : data,
    });
  }
  return {
    mainModule: metadata.main_module,
    compatibilityDate: metadata.compatibility_date ?? "2026-04-20",
    compatibilityFlags: metadata.compatibility_flags ?? [],
    modules,
  };
}

export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }>;
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface StartupRun {
  /** JS + program + GC, ms. */
  cpuMs: number;
  jsMs: number;
  programMs: number;
  gcMs: number;
  samples: number;
  profile: CpuProfile;
}

const SPECIAL = new Set(["(idle)", "(program)", "(garbage collector)", "(root)"]);

/** Sums a profile's sampled time by kind (a sample's delta is the time since the previous sample). */
export function summarize(profile: CpuProfile): Omit<StartupRun, "profile"> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  let js = 0,
    program = 0,
    gc = 0;
  profile.samples.forEach((id, k) => {
    const name = byId.get(id)?.callFrame.functionName ?? "";
    const ms = (profile.timeDeltas[k] ?? 0) / 1000;
    if (name === "(program)") program += ms;
    else if (name === "(garbage collector)") gc += ms;
    else if (!SPECIAL.has(name)) js += ms;
  });
  return { cpuMs: js + program + gc, jsMs: js, programMs: program, gcMs: gc, samples: profile.samples.length };
}

/**
 * One startup in a new workerd. `samplingIntervalUs` undefined keeps V8's default (1 ms, what
 * `wrangler check startup` uses); a finer interval resolves small bundles (the sampler on a busy
 * 2-core machine manages about one sample per 0.4 ms when asked for 0.1 ms).
 */
export async function profileStartup(bundle: WorkerBundle, samplingIntervalUs?: number): Promise<StartupRun> {
  const wrapper = `export default { async fetch() { await import(${JSON.stringify(bundle.mainModule)}); return new Response("ok"); } };`;
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      name: "profiler",
      compatibilityDate: bundle.compatibilityDate,
      compatibilityFlags: bundle.compatibilityFlags,
      modulesRoot: "/",
      modules: [{ type: "ESModule", path: `${crypto.randomUUID()}.mjs`, contents: wrapper }, ...bundle.modules],
      inspectorPort: 0,
    }),
  );
  try {
    await mf.ready;
    const inspector = await mf.getInspectorURL();
    const ws = new WebSocket(new URL("/core:user:profiler", inspector.href).href);
    await new Promise<void>((resolve, reject) => {
      ws.addEventListener("open", () => resolve());
      ws.addEventListener("error", () => reject(new Error("inspector connection failed")));
    });
    let nextId = 0;
    const pending = new Map<number, (result: unknown) => void>();
    ws.addEventListener("message", (event) => {
      const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
      if (message.id !== undefined) pending.get(message.id)?.(message.result);
    });
    const send = <T>(method: string, params: object = {}) =>
      new Promise<T>((resolve) => {
        const id = ++nextId;
        pending.set(id, (result) => resolve(result as T));
        ws.send(JSON.stringify({ id, method, params }));
      });
    await send("Profiler.enable");
    if (samplingIntervalUs) await send("Profiler.setSamplingInterval", { interval: samplingIntervalUs });
    await send("Profiler.start");
    const response = await mf.dispatchFetch("https://startup.bench/");
    const body = await response.text();
    const { profile } = await send<{ profile: CpuProfile }>("Profiler.stop");
    ws.close();
    if (body !== "ok") throw new Error(`the bundle failed to start: ${body.slice(0, 300)}`);
    return { ...summarize(profile), profile };
  } finally {
    await mf.dispose();
  }
}

/** The node_modules package (nested copies as `parent › child`) or own top-level folder of a bundled path. */
export function packageOf(path: string): string {
  const chain = [...path.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)/g)].map((m) => m[1]!);
  if (chain.length) return chain.join(" › ");
  if (path.startsWith("node-built-in-modules:") || path.startsWith("node:")) return "(node built-ins)";
  const dir = path.replace(/^(\.\.\/)+/, "").split("/")[0]!;
  return `(own) ${dir}${path.includes("/") ? "/" : ""}`;
}

/**
 * Charges a startup profile's JS time to packages. esbuild (unminified) starts every bundled file
 * with a `// <path>` line, so the line where a function is defined names its file. A sample is
 * charged to the nearest frame on its stack that is a function of a bundled file: frames of workerd
 * built-ins (node-internal:…), native code and esbuild's helpers (__name, __esm, __commonJS, …) are
 * passed through to their caller. Statements that run directly in the bundle's module body (esbuild
 * hoists ES modules' top levels there) have no line in the profile: "(bundle top-level statements)".
 */
export function attribute(profiles: CpuProfile[], mainModule: string, code: string): Map<string, number> {
  const markers: Array<{ line: number; pkg: string }> = [];
  code.split("\n").forEach((text, line) => {
    const m = /^\/\/ (\S+\.(?:[cm]?[jt]sx?|json)|node-built-in-modules:\S+)$/.exec(text);
    if (m) markers.push({ line, pkg: packageOf(m[1]!) });
  });
  const firstMarker = markers[0]?.line ?? 0;
  const pkgAt = (line: number) => {
    let lo = 0,
      hi = markers.length - 1,
      found = "(bundle prelude)";
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (markers[mid]!.line <= line) {
        found = markers[mid]!.pkg;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  };
  const totals = new Map<string, number>();
  for (const profile of profiles) {
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    profile.samples.forEach((id, k) => {
      const name = byId.get(id)?.callFrame.functionName ?? "";
      if (SPECIAL.has(name)) return;
      let pkg = "(outside the bundle: workerd built-ins)";
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const frame = byId.get(at)!.callFrame;
        if (!frame.url.endsWith(mainModule)) continue;
        if (frame.lineNumber < 0) {
          pkg = "(bundle top-level statements)";
          break;
        }
        if (frame.lineNumber >= firstMarker) {
          pkg = pkgAt(frame.lineNumber);
          break;
        }
      }
      totals.set(pkg, (totals.get(pkg) ?? 0) + (profile.timeDeltas[k] ?? 0) / 1000 / profiles.length);
    });
  }
  return totals;
}
