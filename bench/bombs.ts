// `npm run bench:bombs` — issue 19, finding 1: what JSON bombs cost the running service. Soma as
// `npm start` runs it (wrangler dev, workerd, the embedded Postgres; cloud mode: a signing key is set),
// then, three at a time in parallel, `{"a":[{},{},…]}` bodies at
//   POST /api/workflows  unsigned (8 MB), with a fresh forged X-Inngest-Signature (8 MB, and 4 MB: under
//                        the run cap, so the shape limits answer), and
//   POST /api/import     signed in as a person (8 MB),
//   POST /mcp            with a read-only access token of the person's own (3.9 MB: under the 4 MiB the
//                        MCP library refuses by itself, issue 25),
// each refusal's status and time, the RSS of the workerd processes (from /proc: before each round, and
// its peak during), and whether a normal request still answers right after.
// BENCH_BOMBS_NAME names the result file (bench/results/<name>.json; default "bombs"); BENCH_BOMBS_ONLY
// runs only the doors whose path contains it (e.g. "/mcp").
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { inngestSignature } from "../agents/workflows/signature";
import { machine, markdownTable, mcpAccessToken, round, startBench } from "./support";

const PARALLEL = 3;
const NAME = process.env.BENCH_BOMBS_NAME ?? "bombs";
const ONLY = process.env.BENCH_BOMBS_ONLY;

/** `{"a":[{},{},…]}` of exactly `bytes` bytes (give or take two). */
function bomb(bytes: number): Buffer {
  const objects = Math.floor((bytes - 8) / 3);
  return Buffer.from(`{"a":[${"{},".repeat(objects - 1)}{}]}`);
}

/** The workerd processes this benchmark started (descendants of this process), by pid. */
function workerdPids(): number[] {
  const parents = new Map<number, number>();
  const names = new Map<number, string>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // pid (comm) state ppid …: comm may hold spaces and parentheses, so read from the last ")".
      const close = stat.lastIndexOf(")");
      names.set(Number(entry), stat.slice(stat.indexOf("(") + 1, close));
      parents.set(Number(entry), Number(stat.slice(close + 2).split(" ")[1]));
    } catch {
      // gone meanwhile
    }
  }
  const descends = (pid: number): boolean => {
    for (let p = parents.get(pid); p !== undefined && p > 1; p = parents.get(p)) if (p === process.pid) return true;
    return false;
  };
  return [...names].filter(([pid, name]) => name.startsWith("workerd") && descends(pid)).map(([pid]) => pid);
}

/** The workerd processes' resident memory in MB (summed). */
function rssMb(): number {
  let kb = 0;
  for (const pid of workerdPids()) {
    try {
      kb += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
    } catch {
      // exited (an isolate that died takes workerd with it)
    }
  }
  return kb / 1024;
}

/** Samples RSS every 10 ms until stopped; returns the peak. */
function sampler() {
  let peak = rssMb();
  const timer = setInterval(() => {
    peak = Math.max(peak, rssMb());
  }, 10);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, rssMb());
    },
  };
}

interface Outcome {
  status: number | string;
  ms: number;
}

async function timed(url: string, init: RequestInit): Promise<Outcome> {
  const started = performance.now();
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(120_000) });
    await response.arrayBuffer();
    return { status: response.status, ms: round(performance.now() - started) };
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return { status: `${error instanceof Error ? error.message : String(error)}${cause}`, ms: round(performance.now() - started) };
  }
}

/** A signature of the right form and a fresh time, made without the key. */
function forged(): string {
  return `t=${Math.floor(Date.now() / 1000)}&s=${"ab".repeat(32)}`;
}

const SIGNING_KEY = `signkey-bench-${"0f".repeat(32)}`;
const JSON_TYPE = { "content-type": "application/json" };
const MCP_HEADERS = { ...JSON_TYPE, accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18" };

interface Service {
  base: string;
  cookie: string;
  /** A read-only MCP access token of the signed-in person. */
  mcpToken: string;
  /** A normal request: what must still answer right after the bombs. */
  normal: Record<"health" | "introspection" | "me" | "mcp", () => Promise<Outcome>>;
  stop(): Promise<void>;
}

/** A fresh service, a person signed in, its routes warm. */
async function startService(): Promise<Service> {
  const bench = await startBench({ WRANGLER_LOG: "error" });
  const base = bench.app.url;
  // Signed in as the local developer (npm start runs with ENVIRONMENT=development).
  const signIn = await fetch(`${base}/auth/dev`, { method: "POST", headers: { origin: base } });
  const cookie = signIn.headers
    .getSetCookie()
    .map((c) => c.split(";")[0]!)
    .join("; ");
  if (signIn.status !== 200 || !cookie) throw new Error(`sign-in answered ${signIn.status}`);
  const mcpToken = await mcpAccessToken(base, cookie);
  const normal = {
    health: () => timed(`${base}/api/health`, {}),
    mcp: () =>
      timed(`${base}/mcp`, {
        method: "POST",
        headers: { ...MCP_HEADERS, authorization: `Bearer ${mcpToken}` },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_memories", arguments: {} } }),
      }),
    introspection: async () =>
      timed(`${base}/api/workflows`, { headers: { "x-inngest-signature": await inngestSignature("", SIGNING_KEY) } }),
    me: () => timed(`${base}/api/me`, { headers: { cookie } }),
  };
  for (const check of Object.values(normal)) await check();
  return { base, cookie, mcpToken, normal, stop: () => bench.stop() };
}

interface Round {
  door: string;
  path: string;
  body: Buffer;
  headers: (service: Service) => Record<string, string>;
  after: keyof Service["normal"];
}

async function main() {
  const eight = bomb(8 * 1024 * 1024);
  const four = bomb(4 * 1024 * 1024);
  const all: Round[] = [
    // The floor: what sending 8 MB costs (wrangler dev's proxy and workerd), refused unread by any Worker.
    {
      door: "POST /api/nothing-here, 8 MB (no route: 404)",
      path: "/api/nothing-here",
      body: eight,
      headers: () => JSON_TYPE,
      after: "health",
    },
    { door: "POST /api/workflows, unsigned, 8 MB", path: "/api/workflows", body: eight, headers: () => JSON_TYPE, after: "introspection" },
    {
      door: "POST /api/workflows, forged fresh signature, 8 MB",
      path: "/api/workflows",
      body: eight,
      headers: () => ({ ...JSON_TYPE, "x-inngest-signature": forged() }),
      after: "introspection",
    },
    {
      door: "POST /api/workflows, forged fresh signature, 4 MB",
      path: "/api/workflows",
      body: four,
      headers: () => ({ ...JSON_TYPE, "x-inngest-signature": forged() }),
      after: "introspection",
    },
    {
      door: "POST /api/import, signed in, 8 MB",
      path: "/api/import",
      body: eight,
      headers: (service) => ({ ...JSON_TYPE, cookie: service.cookie, origin: service.base }),
      after: "me",
    },
    {
      door: "POST /mcp, a token of one's own, 3.9 MB",
      path: "/mcp",
      body: bomb(3.9 * 1024 * 1024),
      headers: (service) => ({ ...MCP_HEADERS, authorization: `Bearer ${service.mcpToken}` }),
      after: "mcp",
    },
  ];
  const rounds = all.filter((r) => !ONLY || r.path.includes(ONLY));

  const results = [];
  // A fresh service each round: RSS seldom shrinks back, and a round that kills workerd must not spoil the next.
  for (const round_ of rounds) {
    const service = await startService();
    try {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const before = rssMb();
      const sampling = sampler();
      const refusals = await Promise.all(
        Array.from({ length: PARALLEL }, () =>
          timed(`${service.base}${round_.path}`, { method: "POST", headers: round_.headers(service), body: round_.body }),
        ),
      );
      const peak = sampling.stop();
      const after = await service.normal[round_.after]();
      results.push({
        door: round_.door,
        bodyBytes: round_.body.length,
        workerdProcesses: workerdPids().length,
        rssBeforeMb: round(before),
        rssPeakMb: round(peak),
        rssGrowthMb: round(peak - before),
        refusals,
        after: { request: round_.after, ...after },
      });
      console.log(
        `${round_.door}: ${refusals.map((r) => `${r.status} in ${r.ms} ms`).join(", ")}; RSS ${round(before)} → ${round(peak)} MB`,
      );
    } finally {
      await service.stop();
    }
  }

  const table = markdownTable(
    ["door (3 in parallel)", "RSS before MB", "RSS peak MB", "growth MB", "refusals (status, ms)", "normal request after"],
    results.map((r) => [
      r.door,
      r.rssBeforeMb,
      r.rssPeakMb,
      r.rssGrowthMb,
      r.refusals.map((x) => `${x.status} ${x.ms}`).join(" · "),
      `${r.after.request}: ${r.after.status} ${r.after.ms} ms`,
    ]),
  );
  console.log(table);
  const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  // What ran is the working tree: name the files that differed from the commit.
  const uncommitted = execFileSync("git", ["status", "--porcelain", "--", "worker", "agents", "platform", "db"], { encoding: "utf8" })
    .split("\n")
    .filter(Boolean);
  writeFileSync(
    new URL(`./results/${NAME}.json`, import.meta.url),
    `${JSON.stringify({ ...machine(), commit, uncommitted, parallel: PARALLEL, results, table }, null, 2)}\n`,
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
