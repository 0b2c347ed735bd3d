// Longer than 450 lines: one benchmark's driver, four measurements and the report that sets them side
// by side; the measuring itself lives in bench/startup/.
// `npm run bench:startup` (benchmark 5): Worker startup CPU time and bundle size, and the router's
// overhead against bare Hono. Offline; about 1½ minutes on 2 cores. Prints the tables and writes
// bench/results/startup.json and .md. BENCH_STARTUP_RUNS (10) and BENCH_REQUESTS (2000) scale it.
//  1. Bundle: raw and gzipped bytes of the production bundle (ops/bundle-size.ts, exactly as `npm run
//     bundle:check` measures it) and the biggest packages in it (esbuild's metafile, bytes in output).
//     Variants built once to show what a setting would change: --minify, keep_names = false, both.
//  2. Startup CPU: `wrangler check startup`'s method (bench/startup/profile.ts), each run in a fresh
//     workerd, for the production bundle, the variants and a bare Hono Worker (bench/startup/
//     bare-worker.ts), plus one run of `wrangler check startup` itself as a cross-check. The profiles'
//     JS time is charged to bundled packages to show what is slow at startup.
//  3. Per request (bench/startup/requests.ts): in Node, bare Hono plus the app's middleware one at a
//     time and the real createApp(); in workerd, the production bundle against a bare Hono bundle.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, platform, release, tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { loadSettings, root } from "../ops/cli";
import { measureBundle } from "../ops/bundle-size";
import { wranglerOk } from "../ops/wrangler";
import {
  attribute,
  packageOf,
  profileStartup,
  readWorkerBundle,
  summarize,
  type CpuProfile,
  type StartupRun,
  type WorkerBundle,
} from "./startup/profile";
import { nodeLadder, percentile, workerdRequests, type DbCost, type LadderRow } from "./startup/requests";

/** The version of an installed package, as its package.json says. */
function installedVersion(name: string): string {
  return (JSON.parse(readFileSync(`${root}node_modules/${name}/package.json`, "utf8")) as { version: string }).version;
}

const STARTUP_RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 10);
const VARIANT_RUNS = Math.max(3, Math.ceil(STARTUP_RUNS / 2));
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000);
const WARMUP = 500;
/** "Well under" the targets: half of Cloudflare's 400 ms startup limit; a quarter of 1 ms per request. */
const STARTUP_TARGET_MS = 200;
const OVERHEAD_TARGET_US = 250;
/**
 * V8's sampling interval for the bare Worker only: its whole startup is 1–3 ms, invisible at the
 * default 1 ms (which the app's bundles keep, as `wrangler check startup` does; asking for 0.1 ms
 * costs the big bundle 5–20% in sampler overhead on 2 cores).
 */
const BARE_SAMPLING_US = 100;

interface Build {
  bundle: WorkerBundle;
  code: string;
  rawBytes: number;
  gzipBytes: number;
  file: string;
}

const settings = loadSettings({});
const log = (line: string) => console.error(line);

/** `wrangler deploy --dry-run` into `dir`: the upload form (what `check startup --worker` takes), the modules, optionally the metafile. */
async function build(dir: string, extra: string[], metafile?: string): Promise<Build> {
  mkdirSync(dir, { recursive: true });
  const args = [
    "deploy",
    "--dry-run",
    "--outdir",
    `${dir}/out`,
    "--outfile",
    `${dir}/worker.bundle`,
    ...(metafile ? ["--metafile", metafile] : []),
    ...extra,
  ];
  await wranglerOk(settings, args, { echo: () => {} });
  const bundle = await readWorkerBundle(`${dir}/worker.bundle`);
  const sizes = bundle.modules.map((m) => {
    const bytes = Buffer.from(m.contents);
    return { raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
  });
  return {
    bundle,
    code: String(bundle.modules.find((m) => m.path === bundle.mainModule)!.contents),
    rawBytes: sizes.reduce((n, s) => n + s.raw, 0),
    gzipBytes: sizes.reduce((n, s) => n + s.gzip, 0),
    file: `${dir}/worker.bundle`,
  };
}

/** wrangler.toml with `keep_names = false` (and absolute paths, since the copy lives in a temporary folder). */
function configWithoutKeepNames(dir: string): string {
  const original = readFileSync(`${root}wrangler.toml`, "utf8");
  const changed = original
    .replace(/^main = "([^"]+)"$/m, (_, main: string) => `main = ${JSON.stringify(`${root}${main}`)}\nkeep_names = false`)
    .replace(/^directory = "\.\/([^"]+)"$/m, (_, d: string) => `directory = ${JSON.stringify(`${root}${d}`)}`);
  if (!changed.includes("keep_names = false") || changed.includes('directory = "./'))
    throw new Error("wrangler.toml changed shape: cannot derive the keep_names = false variant");
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${dir}/wrangler.toml`, changed);
  return `${dir}/wrangler.toml`;
}

function topPackages(
  metafile: string,
  totalBytes: number,
  limit: number,
): Array<{ package: string; bytes: number; share: number; files: number }> {
  const meta = JSON.parse(readFileSync(metafile, "utf8")) as {
    outputs: Record<string, { inputs: Record<string, { bytesInOutput: number }> }>;
  };
  const totals = new Map<string, { bytes: number; files: number }>();
  for (const [name, output] of Object.entries(meta.outputs)) {
    if (name.endsWith(".map")) continue;
    for (const [path, input] of Object.entries(output.inputs)) {
      if (input.bytesInOutput === 0) continue;
      const entry = totals.get(packageOf(path)) ?? { bytes: 0, files: 0 };
      entry.bytes += input.bytesInOutput;
      entry.files++;
      totals.set(packageOf(path), entry);
    }
  }
  return [...totals]
    .map(([pkg, t]) => ({ package: pkg, bytes: t.bytes, share: round((100 * t.bytes) / totalBytes), files: t.files }))
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, limit);
}

interface StartupStats {
  runs: number;
  p50: number;
  p95: number;
  min: number;
  max: number;
  js: number;
  program: number;
  gc: number;
  samplingUs: number;
}

function stats(runs: StartupRun[], samplingUs: number): StartupStats {
  const cpu = runs.map((r) => r.cpuMs);
  const med = (f: (r: StartupRun) => number) => round(percentile(runs.map(f), 50));
  return {
    runs: runs.length,
    p50: round(percentile(cpu, 50)),
    p95: round(percentile(cpu, 95)),
    min: round(Math.min(...cpu)),
    max: round(Math.max(...cpu)),
    js: med((r) => r.jsMs),
    program: med((r) => r.programMs),
    gc: med((r) => r.gcMs),
    samplingUs,
  };
}

async function main() {
  const started = Date.now();
  const loadBefore = loadavg()[0]!;
  const work = mkdtempSync(`${tmpdir()}/soma-bench-startup-`);
  try {
    // 1. Bundles.
    log("building: the production bundle (measureBundle, then with a metafile), three variants and bare Hono …");
    const official = await measureBundle();
    const soma = await build(`${work}/soma`, [], `${work}/meta.json`);
    const minified = await build(`${work}/minified`, ["--minify"]);
    const noKeepNamesConfig = configWithoutKeepNames(`${work}/no-keep-names`);
    const noKeepNames = await build(`${work}/no-keep-names`, ["--config", noKeepNamesConfig]);
    const minifiedNoKeepNames = await build(`${work}/minified-no-keep-names`, ["--config", noKeepNamesConfig, "--minify"]);
    mkdirSync(`${work}/bare`, { recursive: true });
    const bareMain = fileURLToPath(new URL("./startup/bare-worker.ts", import.meta.url));
    writeFileSync(
      `${work}/bare/wrangler.toml`,
      `name = "bench-bare-hono"\nmain = ${JSON.stringify(bareMain)}\ncompatibility_date = ${JSON.stringify(soma.bundle.compatibilityDate)}\ncompatibility_flags = ${JSON.stringify(soma.bundle.compatibilityFlags)}\n`,
    );
    const bare = await build(`${work}/bare`, ["--config", `${work}/bare/wrangler.toml`]);
    const packages = topPackages(`${work}/meta.json`, soma.rawBytes, 10);

    // 2. Startup CPU, interleaved so that machine noise falls on every bundle alike.
    log(`startup: ${STARTUP_RUNS} fresh workerd runs of the production and bare bundles, ${VARIANT_RUNS} of each variant …`);
    const runs: Record<"soma" | "bare" | "minified" | "noKeepNames" | "minifiedNoKeepNames", StartupRun[]> = {
      soma: [],
      bare: [],
      minified: [],
      noKeepNames: [],
      minifiedNoKeepNames: [],
    };
    for (let i = 0; i < STARTUP_RUNS; i++) {
      runs.soma.push(await profileStartup(soma.bundle));
      runs.bare.push(await profileStartup(bare.bundle, BARE_SAMPLING_US));
      if (i < VARIANT_RUNS) {
        runs.minified.push(await profileStartup(minified.bundle));
        runs.noKeepNames.push(await profileStartup(noKeepNames.bundle));
        runs.minifiedNoKeepNames.push(await profileStartup(minifiedNoKeepNames.bundle));
      }
    }
    // The tool itself, once, with its defaults, on the same bundle.
    await wranglerOk(settings, ["check", "startup", "--worker", soma.file, "--outfile", `${work}/check-startup.cpuprofile`], {
      echo: () => {},
    });
    const wranglerCheck = summarize(JSON.parse(readFileSync(`${work}/check-startup.cpuprofile`, "utf8")) as CpuProfile);
    const contributors = [
      ...attribute(
        runs.soma.map((r) => r.profile),
        soma.bundle.mainModule,
        soma.code,
      ),
    ]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 12)
      .map(([pkg, ms]) => ({ package: pkg, ms: round(ms) }));
    const startup = {
      soma: stats(runs.soma, 1000),
      minified: stats(runs.minified, 1000),
      noKeepNames: stats(runs.noKeepNames, 1000),
      minifiedNoKeepNames: stats(runs.minifiedNoKeepNames, 1000),
      bare: stats(runs.bare, BARE_SAMPLING_US),
    };

    // 3. Per request.
    log(`requests: Node, ${REQUESTS} per app after ${WARMUP} warm-up …`);
    const node = await nodeLadder(REQUESTS, WARMUP);
    log(`requests: workerd, ${REQUESTS} per app after ${WARMUP} warm-up …`);
    const workerd = await workerdRequests(soma.bundle, bare.bundle, node.loginHtml, REQUESTS, WARMUP);

    // Report.
    const meta = {
      date: new Date().toISOString(),
      machine: {
        cpu: cpus()[0]?.model ?? "unknown",
        cores: cpus().length,
        os: `${platform()} ${release()}`,
        node: process.version,
        loadAverage1m: { before: round(loadBefore), after: round(loadavg()[0]!) },
      },
      runtime: `wrangler ${installedVersion("wrangler")}, miniflare ${installedVersion("miniflare")} (local workerd)`,
    };
    const nodeRow = (app: "bare" | "full", path: string) => node.rows.find((r) => r.path === path && r.app.startsWith(app))!.timing;
    const wd = (app: "bare" | "full", path: string) => workerd.find((r) => r.path === path && r.app.startsWith(app))!;
    const overhead = {
      nodeLoginP50: round(nodeRow("full", "/login").p50 - nodeRow("bare", "/login").p50),
      nodeLoginP95: round(nodeRow("full", "/login").p95 - nodeRow("bare", "/login").p95),
      nodeLoginP99: round(nodeRow("full", "/login").p99 - nodeRow("bare", "/login").p99),
      node404P50: round(nodeRow("full", "/nothing-here").p50 - nodeRow("bare", "/nothing-here").p50),
      workerdLoginInIsolate: round(wd("full", "/login").inIsolate.p50 - wd("bare", "/login").inIsolate.p50),
      workerd404InIsolate: round(wd("full", "/nothing-here").inIsolate.p50 - wd("bare", "/nothing-here").inIsolate.p50),
      workerdLoginE2eP50: round(wd("full", "/login").e2e.p50 - wd("bare", "/login").e2e.p50),
      workerd404E2eP50: round(wd("full", "/nothing-here").e2e.p50 - wd("bare", "/nothing-here").e2e.p50),
    };
    const worstOverhead = Math.max(
      overhead.nodeLoginP50,
      overhead.node404P50,
      overhead.workerdLoginInIsolate,
      overhead.workerd404InIsolate,
    );
    const targets = [
      {
        target: `startup CPU p50 ≤ ${STARTUP_TARGET_MS} ms (well under Cloudflare's 400 ms limit)`,
        value: `p50 ${startup.soma.p50} ms, p95 ${startup.soma.p95} ms`,
        met: startup.soma.p50 <= STARTUP_TARGET_MS,
      },
      {
        target: `router + middleware ≤ ${OVERHEAD_TARGET_US} µs per request over bare Hono (well under 1 ms)`,
        value: `${worstOverhead} µs (worst of Node Δp50 and workerd in-isolate Δ, /login and 404)`,
        met: worstOverhead <= OVERHEAD_TARGET_US,
      },
    ];
    const findings = makeFindings({
      official,
      soma,
      minified,
      noKeepNames,
      minifiedNoKeepNames,
      startup,
      contributors,
      packages,
      node,
      overhead,
    });

    const kib = (b: number) => `${(b / 1024).toFixed(1)} KiB`;
    const srow = (name: string, s: StartupStats) =>
      `| ${name} | ${s.runs} | ${s.p50} | ${s.p95} | ${s.min}–${s.max} | ${s.js} | ${s.program} | ${s.gc} |`;
    const us = (n: number) => String(Math.round(n));
    const lines = [
      "## Bundle",
      "",
      "| bundle | raw | gzipped |",
      "|---|---:|---:|",
      `| production (ops/bundle-size.ts measureBundle) | ${kib(official.bytes)} | ${kib(official.gzipBytes)} |`,
      `| production, --minify | ${kib(minified.rawBytes)} | ${kib(minified.gzipBytes)} |`,
      `| production, keep_names = false | ${kib(noKeepNames.rawBytes)} | ${kib(noKeepNames.gzipBytes)} |`,
      `| production, --minify + keep_names = false | ${kib(minifiedNoKeepNames.rawBytes)} | ${kib(minifiedNoKeepNames.gzipBytes)} |`,
      `| bare Hono, one route | ${kib(bare.rawBytes)} | ${kib(bare.gzipBytes)} |`,
      "",
      "Biggest packages in the production bundle (esbuild metafile, bytes in the unminified output; a nested copy is `parent › package`, own code is `(own) folder/`):",
      "",
      "| package | bytes | share | files |",
      "|---|---:|---:|---:|",
      ...packages.map((p) => `| ${p.package} | ${kib(p.bytes)} | ${p.share}% | ${p.files} |`),
      "",
      "## Startup CPU time (local workerd, `wrangler check startup`'s method)",
      "",
      `Each run: a fresh workerd, a wrapper Worker whose first request does \`await import(<bundle>)\`, the isolate's V8 CPU profile around it; startup CPU = sampled JS + program (parse/compile, native) + GC time. Sampling every 1 ms (the tool's default), ${BARE_SAMPLING_US} µs for bare Hono.`,
      "",
      "| Worker | runs | p50 ms | p95 ms | range ms | JS ms | program ms | GC ms |",
      "|---|---:|---:|---:|---|---:|---:|---:|",
      srow("production bundle", startup.soma),
      srow("production, --minify", startup.minified),
      srow("production, keep_names = false", startup.noKeepNames),
      srow("production, --minify + keep_names = false", startup.minifiedNoKeepNames),
      srow("bare Hono, one route (at the profiler's resolution)", startup.bare),
      `| \`wrangler check startup --worker\` (the tool, 1 run) | 1 | ${round(wranglerCheck.cpuMs)} | | | ${round(wranglerCheck.jsMs)} | ${round(wranglerCheck.programMs)} | ${round(wranglerCheck.gcMs)} |`,
      "",
      "Where the production bundle's startup JS time goes (profile samples charged to the bundled package whose function was running; mean ms per startup; GC and program time not included):",
      "",
      "| package | ms |",
      "|---|---:|",
      ...contributors.map((c) => `| ${c.package} | ${c.ms} |`),
      "",
      "## Per request, Node (`app.fetch(request, env, ctx)` called directly)",
      "",
      `µs per request, ${REQUESTS} requests per app after ${WARMUP} warm-up, apps interleaved. Bare Hono answers GET /login with the real page's HTML; each row adds one of worker/app.ts's middleware.`,
      "",
      "| app | path | p50 µs | p95 µs | p99 µs | Δp50 vs bare µs |",
      "|---|---|---:|---:|---:|---:|",
      ...node.rows.map(
        (r) =>
          `| ${r.app} | ${r.path} | ${us(r.timing.p50)} | ${us(r.timing.p95)} | ${us(r.timing.p99)} | ${us(r.timing.p50 - nodeRow("bare", r.path).p50)} |`,
      ),
      "",
      `The per-request Database (db/workerd-socket.ts workerdDatabase) alone: ${round(node.db.database)} µs per call = postgres.js client ${round(node.db.postgresClient)} µs + drizzle(client, { schema }) ${round(node.db.drizzleWithSchema)} µs (drizzle without the schema: ${round(node.db.drizzleWithoutSchema)} µs).`,
      "",
      "## Per request, workerd (Miniflare: the production bundle against a bare Hono bundle)",
      "",
      `End to end: Node → dispatchFetch → workerd → body read, ${REQUESTS} sequential requests per app (Miniflare's loopback included, the same for both). In the isolate: a driver Worker bundled with each app calls its fetch in batches of ${workerd[0]!.inIsolate.perBatch}; workerd's clock ticks in whole ms, so that is the mean per request of a batch (p50 and range of ${workerd[0]!.inIsolate.batches} batches).`,
      "",
      "| app | path | e2e p50 µs | e2e p95 µs | e2e p99 µs | in isolate µs/request | body bytes |",
      "|---|---|---:|---:|---:|---:|---:|",
      ...workerd.map(
        (r) =>
          `| ${r.app} | ${r.path} | ${us(r.e2e.p50)} | ${us(r.e2e.p95)} | ${us(r.e2e.p99)} | ${round(r.inIsolate.p50)} (${round(r.inIsolate.min)}–${round(r.inIsolate.max)}) | ${r.bodyBytes} |`,
      ),
      "",
      "## The app's overhead over bare Hono (µs per request)",
      "",
      "| comparison | GET /login | 404 |",
      "|---|---:|---:|",
      `| Node, Δp50 | ${overhead.nodeLoginP50} | ${overhead.node404P50} |`,
      `| Node, Δp95 / Δp99 | ${overhead.nodeLoginP95} / ${overhead.nodeLoginP99} | |`,
      `| workerd in the isolate, Δ mean | ${overhead.workerdLoginInIsolate} | ${overhead.workerd404InIsolate} |`,
      `| workerd end to end, Δp50 | ${overhead.workerdLoginE2eP50} | ${overhead.workerd404E2eP50} |`,
      "",
      "## Targets",
      "",
      "| target | value | |",
      "|---|---|---|",
      ...targets.map((t) => `| ${t.target} | ${t.value} | ${t.met ? "met" : "MISSED"} |`),
      "",
      "## Findings",
      "",
      ...findings.map((f) => `- ${f}`),
    ];
    const body = lines.join("\n");
    console.log(body);
    const results = {
      ...meta,
      bundle: {
        raw: official.bytes,
        gzip: official.gzipBytes,
        files: official.files,
        minified: { raw: minified.rawBytes, gzip: minified.gzipBytes },
        noKeepNames: { raw: noKeepNames.rawBytes, gzip: noKeepNames.gzipBytes },
        minifiedNoKeepNames: { raw: minifiedNoKeepNames.rawBytes, gzip: minifiedNoKeepNames.gzipBytes },
        bareHono: { raw: bare.rawBytes, gzip: bare.gzipBytes },
        topPackages: packages,
      },
      startup: {
        method:
          "wrangler check startup's: fresh workerd per run; V8 CPU profile of the isolate around the first request, whose handler does `await import(<main module>)`; startup = sampled JS + (program) + (garbage collector) time, idle excluded",
        ...startup,
        wranglerCheckStartup: {
          cpuMs: round(wranglerCheck.cpuMs),
          jsMs: round(wranglerCheck.jsMs),
          programMs: round(wranglerCheck.programMs),
          gcMs: round(wranglerCheck.gcMs),
        },
        contributorsMs: contributors,
      },
      requests: {
        node: node.rows.map((r) => ({ app: r.app, path: r.path, ...roundTiming(r.timing) })),
        databasePerCallUs: Object.fromEntries(Object.entries(node.db).map(([k, v]) => [k, round(v)])),
        workerd: workerd.map((r) => ({
          app: r.app,
          path: r.path,
          e2e: roundTiming(r.e2e),
          inIsolate: { ...r.inIsolate, p50: round(r.inIsolate.p50), min: round(r.inIsolate.min), max: round(r.inIsolate.max) },
          bodyBytes: r.bodyBytes,
        })),
        overheadUs: overhead,
      },
      targets,
      findings,
      seconds: Math.round((Date.now() - started) / 1000),
    };
    writeFileSync(new URL("./results/startup.json", import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
    writeFileSync(
      new URL("./results/startup.md", import.meta.url),
      `# Worker startup, bundle size and router overhead\n\n${JSON.stringify(meta)}\n\n${body}\n`,
    );
    log(`done in ${results.seconds} s`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

function makeFindings(d: {
  official: { bytes: number; gzipBytes: number };
  soma: Build;
  minified: Build;
  noKeepNames: Build;
  minifiedNoKeepNames: Build;
  startup: Record<"soma" | "minified" | "noKeepNames" | "minifiedNoKeepNames" | "bare", StartupStats>;
  contributors: Array<{ package: string; ms: number }>;
  packages: Array<{ package: string; bytes: number }>;
  node: { rows: LadderRow[]; db: DbCost };
  overhead: Record<string, number>;
}): string[] {
  const kib = (b: number) => `${Math.round(b / 1024)} KiB`;
  const change = (a: number, b: number) => `${a < b ? "−" : "+"}${Math.abs(Math.round((100 * (a - b)) / b))}%`;
  const variant = (name: string, b: Build, s: StartupStats) =>
    `${name}: ${kib(b.rawBytes)} raw (${change(b.rawBytes, d.soma.rawBytes)}), ${kib(b.gzipBytes)} gzipped (${change(b.gzipBytes, d.soma.gzipBytes)}), startup p50 ${s.p50} ms (production: ${d.startup.soma.p50} ms)`;
  const ladder = d.node.rows.filter((r) => r.path === "/login");
  const steps = ladder.slice(1).map((r, i) => `${r.app.replace(/^\+ /, "")} ${Math.round(r.timing.p50 - ladder[i]!.timing.p50)} µs`);
  const databaseStep = ladder.find((r) => r.app === "+ Database per request");
  const beforeDatabase = ladder[ladder.indexOf(databaseStep!) - 1];
  const full = ladder.find((r) => r.app.startsWith("full"))!;
  return [
    `The production bundle is ${kib(d.official.bytes)} raw, ${kib(d.official.gzipBytes)} gzipped. Biggest packages: ${d.packages
      .slice(0, 5)
      .map((p) => `${p.package} ${kib(p.bytes)}`)
      .join(", ")}.`,
    `${variant("--minify", d.minified, d.startup.minified)} (names are kept: wrangler minifies with keepNames on).`,
    `${variant("keep_names = false", d.noKeepNames, d.startup.noKeepNames)} — not a safe setting: the agents SDK routes sub-agent and workflow callbacks by constructor.name and asks for keepNames.`,
    `${variant("--minify + keep_names = false", d.minifiedNoKeepNames, d.startup.minifiedNoKeepNames)} (same caveat).`,
    `Startup p50 ${d.startup.soma.p50} ms against ${d.startup.bare.p50} ms (max ${d.startup.bare.max}) for bare Hono, whose startup is at the profiler's resolution: nearly all of it is evaluating the app's dependency graph at the top level. Largest JS contributors (ms per startup): ${d.contributors
      .slice(0, 6)
      .map((c) => `${c.package} ${c.ms}`)
      .join(", ")}.`,
    `Node, GET /login, Δp50 added by each step: ${steps.join(", ")} (±5 µs is noise).`,
    databaseStep && beforeDatabase
      ? `Without the per-request Database the middleware costs ${Math.round(beforeDatabase.timing.p50 - ladder[0]!.timing.p50)} µs at p50; building the Database adds ${Math.round(databaseStep.timing.p50 - beforeDatabase.timing.p50)} µs (p99 ${Math.round(full.timing.p99)} µs for the full app: the garbage it makes shows up as GC pauses). It is built even on routes that never query. Measured apart: the whole Database ${Math.round(d.node.db.database)} µs, the postgres.js client ${Math.round(d.node.db.postgresClient)} µs, drizzle(client, { schema }) ${Math.round(d.node.db.drizzleWithSchema)} µs (mostly allocation, so GC-bound and noisy).`
      : "",
  ].filter(Boolean);
}

function roundTiming(t: { n: number; p50: number; p95: number; p99: number; mean: number }) {
  return { n: t.n, p50: round(t.p50), p95: round(t.p95), p99: round(t.p99), mean: round(t.mean) };
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
