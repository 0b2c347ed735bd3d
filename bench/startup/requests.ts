// Per-request cost of the app's router and middleware against bare Hono, for routes that touch no
// database (GET /login, an unknown path's 404). Two places:
//  • Node: `app.fetch(request, env, ctx)` called directly, timed per request with performance.now().
//    A ladder adds the app's cross-cutting middleware one at a time to a bare Hono app (the third one
//    mirrors worker/app.ts's per-request middleware line for line), then the real createApp().
//  • workerd (Miniflare): the production bundle and a bare Hono bundle, (a) end to end through
//    dispatchFetch — per-request percentiles including Miniflare's loopback, the same for both —
//    and (b) in the isolate: a driver Worker bundled with the app calls its fetch in a loop; workerd's
//    clock has 1 ms resolution, so that gives the mean per request of each batch, not percentiles.
import { register } from "node:module";
import { Hono, type MiddlewareHandler } from "hono";
import { requestId } from "hono/request-id";
import { convertV4MiniflareOptions, type Json, Miniflare, type V4WorkerOptions } from "miniflare";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { loadConfig } from "../../platform/config";
import * as schema from "../../db/schema";
import { createTelemetry } from "../../platform/telemetry/sinks";
import { secureHeadersFor } from "../../worker/security-headers";
import type { WorkerBundle } from "./profile";

const DATABASE_URL = "postgres://x:y@127.0.0.1:9/x";
/** The env the Worker gets: wrangler.toml's vars (ENVIRONMENT test: no production secrets needed) and Hyperdrive. */
const BENCH_ENV = {
  ENVIRONMENT: "test",
  AI_PROVIDER: "workers-ai",
  AI_MODEL: "@cf/meta/llama-3.3-70b-instruct-fp8-fast",
  EMBEDDING_PROVIDER: "workers-ai",
  EMBEDDING_MODEL: "@cf/baai/bge-m3",
  TELEGRAM_API_ROOT: "https://api.telegram.org",
  HYPERDRIVE: { connectionString: DATABASE_URL },
};
const CTX = { waitUntil() {}, passThroughOnException() {}, props: {} };

type FetchApp = { fetch(request: Request, env: unknown, ctx: unknown): Response | Promise<Response> };

interface Timing {
  n: number;
  p50: number;
  p95: number;
  p99: number;
  mean: number;
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function timing(us: number[]): Timing {
  return {
    n: us.length,
    p50: percentile(us, 50),
    p95: percentile(us, 95),
    p99: percentile(us, 99),
    mean: us.reduce((a, b) => a + b, 0) / us.length,
  };
}

/**
 * Imports worker/app.ts into Node. It is Worker code: `cloudflare:*` modules become stubs (no route
 * measured here reaches them). The agents SDK needs a global WebSocket at import: Node 24 has one.
 */
async function importCreateApp(): Promise<() => FetchApp> {
  const stubs: Record<string, string> = {
    "cloudflare:workers":
      "export class DurableObject { constructor(ctx, env) { this.ctx = ctx; this.env = env; } } export class RpcTarget {} export class WorkerEntrypoint {} export class WorkflowEntrypoint {} export const env = {}; export const exports = {}; export function waitUntil() {}",
    "cloudflare:email": "export class EmailMessage {}",
    "cloudflare:sockets": "export function connect() { throw new Error('no sockets in the benchmark'); }",
  };
  const hook = `const stubs = ${JSON.stringify(stubs)};
export async function resolve(specifier, context, next) {
  if (Object.hasOwn(stubs, specifier)) return { url: "data:text/javascript," + encodeURIComponent(stubs[specifier]), shortCircuit: true };
  return next(specifier, context);
}`;
  register(`data:text/javascript,${encodeURIComponent(hook)}`);
  // Not a literal specifier: worker/ is type-checked by tsconfig.json (workerd types), not this project.
  const appPath = "../../worker/app.ts";
  const mod = (await import(new URL(appPath, import.meta.url).href)) as { createApp: () => FetchApp };
  return mod.createApp;
}

async function importWorkerdDatabase(): Promise<(connectionString: string) => unknown> {
  const path = "../../db/workerd-socket.ts";
  return ((await import(new URL(path, import.meta.url).href)) as { workerdDatabase: (cs: string) => unknown }).workerdDatabase;
}

type BenchVars = { Bindings: typeof BENCH_ENV; Variables: Record<string, unknown> };

/** worker/app.ts's third middleware, line for line (config, telemetry, the per-request Database, the log line). */
function perRequestMiddleware(workerdDatabase: ((cs: string) => unknown) | null): MiddlewareHandler<BenchVars> {
  return async (c, next) => {
    const started = Date.now();
    const config = loadConfig(c.env);
    const telemetry = createTelemetry(config);
    c.set("config", config);
    c.set("telemetry", telemetry);
    if (workerdDatabase) c.set("db", workerdDatabase(c.env.HYPERDRIVE.connectionString));
    try {
      await next();
    } finally {
      telemetry.log({
        kind: "request",
        requestId: c.var.requestId,
        method: c.req.method,
        route: c.req.routePath,
        status: c.res.status,
        durationMs: Date.now() - started,
      });
      c.executionCtx.waitUntil(telemetry.flush());
    }
  };
}

export interface LadderRow {
  app: string;
  path: string;
  timing: Timing;
}

/** Runs `requests` GETs of `path` per app, after `warmup`, interleaved in rounds so drift hits all apps alike. */
async function measure(
  apps: Array<{ name: string; app: FetchApp; path: string }>,
  requests: number,
  warmup: number,
  rounds = 4,
): Promise<LadderRow[]> {
  const samples = apps.map(() => [] as number[]);
  const once = async (a: { app: FetchApp; path: string }) => {
    const t0 = performance.now();
    const response = await a.app.fetch(new Request(`https://soma.bench${a.path}`), BENCH_ENV, CTX);
    await response.arrayBuffer();
    return (performance.now() - t0) * 1000;
  };
  for (const a of apps) for (let i = 0; i < warmup; i++) await once(a);
  const perRound = Math.ceil(requests / rounds);
  for (let r = 0; r < rounds; r++) {
    for (const [k, a] of apps.entries())
      for (let i = 0; i < perRound && samples[k]!.length < requests; i++) samples[k]!.push(await once(a));
  }
  return apps.map((a, k) => ({ app: a.name, path: a.path, timing: timing(samples[k]!) }));
}

export interface DbCost {
  /** workerdDatabase(): what the middleware builds per request. */
  database: number;
  /** Its parts: the postgres.js client (Database's options), drizzle with the schema, drizzle without. */
  postgresClient: number;
  drizzleWithSchema: number;
  drizzleWithoutSchema: number;
}

/** Mean µs per call of `fn`, after a warm-up. */
function perCall(fn: () => unknown, n: number, warmup: number): number {
  for (let i = 0; i < warmup; i++) fn();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) fn();
  return ((performance.now() - t0) * 1000) / n;
}

export async function nodeLadder(requests: number, warmup: number): Promise<{ rows: LadderRow[]; loginHtml: string; db: DbCost }> {
  const createApp = await importCreateApp();
  const workerdDatabase = await importWorkerdDatabase();
  const full = createApp();
  const loginResponse = await full.fetch(new Request("https://soma.bench/login"), BENCH_ENV, CTX);
  if (loginResponse.status !== 200) throw new Error(`GET /login answered ${loginResponse.status}`);
  const loginHtml = await loginResponse.text();

  const ladder = (middleware: Array<MiddlewareHandler<BenchVars>>): FetchApp => {
    const app = new Hono<BenchVars>();
    for (const m of middleware) app.use(m);
    app.get("/login", (c) => c.html(loginHtml));
    return app;
  };
  const rid = requestId({ headerName: "X-Request-Id", limitLength: 64 }) as MiddlewareHandler<BenchVars>;
  const sec = secureHeadersFor(["'none'"]) as MiddlewareHandler<BenchVars>;
  const apps = [
    { name: "bare Hono (one route)", app: ladder([]), path: "/login" },
    { name: "+ requestId", app: ladder([rid]), path: "/login" },
    { name: "+ secureHeaders", app: ladder([rid, sec]), path: "/login" },
    { name: "+ config & telemetry", app: ladder([rid, sec, perRequestMiddleware(null)]), path: "/login" },
    { name: "+ Database per request", app: ladder([rid, sec, perRequestMiddleware(workerdDatabase)]), path: "/login" },
    { name: "full app (createApp)", app: full, path: "/login" },
    { name: "bare Hono (one route)", app: ladder([]), path: "/nothing-here" },
    { name: "full app (createApp)", app: full, path: "/nothing-here" },
  ];
  const rows = await measure(apps, requests, warmup);

  // The Database object alone, and its parts (same options as db/database.ts).
  const client = () => postgres(DATABASE_URL, { max: 5, connect_timeout: 5, fetch_types: false, onnotice: () => {} });
  const one = client();
  const db: DbCost = {
    database: perCall(() => workerdDatabase(DATABASE_URL), requests, warmup),
    postgresClient: perCall(client, requests, warmup),
    drizzleWithSchema: perCall(() => drizzle(one, { schema }), requests, warmup),
    drizzleWithoutSchema: perCall(() => drizzle(one), requests, warmup),
  };
  return { rows, loginHtml, db };
}

export interface WorkerdRow {
  app: string;
  path: string;
  /** End to end through dispatchFetch (µs). */
  e2e: Timing;
  /** In the isolate: mean µs per request of each batch. */
  inIsolate: { batches: number; perBatch: number; p50: number; min: number; max: number };
  bodyBytes: number;
}

/** A driver that loops over the app's fetch inside the isolate; workerd's clock advances during CPU work locally. */
function driver(mainModule: string): string {
  return `import app from ${JSON.stringify(`./${mainModule}`)};
export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const path = url.searchParams.get("path"), n = Number(url.searchParams.get("n"));
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const response = await app.fetch(new Request("https://soma.bench" + path), env, ctx);
      await response.arrayBuffer();
    }
    return Response.json({ ms: performance.now() - t0 });
  },
};`;
}

export async function workerdRequests(
  soma: WorkerBundle,
  bare: WorkerBundle,
  loginHtml: string,
  requests: number,
  warmup: number,
): Promise<WorkerdRow[]> {
  const worker = (name: string, bundle: WorkerBundle, bindings: Record<string, Json>, withDriver: boolean): V4WorkerOptions => ({
    name,
    routes: [`${name}.bench/*`],
    compatibilityDate: bundle.compatibilityDate,
    compatibilityFlags: bundle.compatibilityFlags,
    modulesRoot: "/",
    modules: withDriver
      ? [{ type: "ESModule", path: "bench-driver.mjs", contents: driver(bundle.mainModule) }, ...bundle.modules]
      : bundle.modules,
    bindings,
  });
  const bareEnv = { LOGIN_HTML: loginHtml };
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      workers: [
        worker("soma", soma, BENCH_ENV, false),
        worker("bare", bare, bareEnv, false),
        worker("soma-loop", soma, BENCH_ENV, true),
        worker("bare-loop", bare, bareEnv, true),
      ],
    }),
  );
  try {
    await mf.ready;
    const cases = [
      { app: "soma", name: "full app (production bundle)", path: "/login" },
      { app: "bare", name: "bare Hono (one route)", path: "/login" },
      { app: "soma", name: "full app (production bundle)", path: "/nothing-here" },
      { app: "bare", name: "bare Hono (one route)", path: "/nothing-here" },
    ];
    const e2e = cases.map(() => [] as number[]);
    const bodyBytes = cases.map(() => 0);
    const once = async (k: number) => {
      const c = cases[k]!;
      const t0 = performance.now();
      const response = await mf.dispatchFetch(`http://${c.app}.bench${c.path}`);
      const body = await response.arrayBuffer();
      bodyBytes[k] = body.byteLength;
      return (performance.now() - t0) * 1000;
    };
    for (const k of cases.keys()) for (let i = 0; i < warmup; i++) await once(k);
    const rounds = 4,
      perRound = Math.ceil(requests / rounds);
    for (let r = 0; r < rounds; r++)
      for (const k of cases.keys()) for (let i = 0; i < perRound && e2e[k]!.length < requests; i++) e2e[k]!.push(await once(k));

    // In the isolate: one warm-up batch, then batches of `perBatch` until `requests` are done.
    const perBatch = 400;
    const batches = Math.max(1, Math.round(requests / perBatch));
    const batchMeans = cases.map(() => [] as number[]);
    const batch = async (k: number, n: number) => {
      const c = cases[k]!;
      const response = await mf.dispatchFetch(`http://${c.app}-loop.bench/?path=${encodeURIComponent(c.path)}&n=${n}`);
      const { ms } = (await response.json()) as { ms: number };
      return (ms * 1000) / n;
    };
    for (const k of cases.keys()) await batch(k, warmup);
    for (let b = 0; b < batches; b++) for (const k of cases.keys()) batchMeans[k]!.push(await batch(k, perBatch));
    return cases.map((c, k) => ({
      app: c.name,
      path: c.path,
      e2e: timing(e2e[k]!),
      inIsolate: {
        batches,
        perBatch,
        p50: percentile(batchMeans[k]!, 50),
        min: Math.min(...batchMeans[k]!),
        max: Math.max(...batchMeans[k]!),
      },
      bodyBytes: bodyBytes[k]!,
    }));
  } finally {
    await mf.dispose();
  }
}
