// Harness for tests that run Soma the way a person does: `npm start` (tsx ops/start.ts) as a separate
// process tree (tsx → node → embedded Postgres, wrangler → workerd, esbuild), killed, interrupted and
// started again over the same state directory. Linux only: process trees are read from /proc.
//
//   launch         spawn the service in its own process group, wait for /api/health (200 or 503)
//   killEverything SIGKILL every process of the service at once (a power cut, an OOM kill)
//   interrupt      Ctrl-C: SIGINT to the service's process group, then check nothing is left behind
//   stopAll        afterEach: kill whatever the test started, release what it held at the stand-in
//
// Every process of a service carries SOMA_SERVICE_UNDER_TEST=<id> in its environment (children inherit
// it), so one that left the tree (re-parented after its parent died) is still found and reported.
// The Bot API and the model are reached through a tap in the test process (startTap) that forwards to
// the shared stand-in and records each request as it ARRIVES: the stand-in records a held request
// only once it is released, and a test has to know that a turn is in flight before it pulls the plug.
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest, createServer, type IncomingMessage, type Server } from "node:http";
import { createServer as createTcpServer } from "node:net";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { WELCOME } from "../../agents/commands/index";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const BOT_TOKEN = "737373:service-test-token";
export const WEBHOOK_SECRET = "service-test-secret";
const MARKER = "SOMA_SERVICE_UNDER_TEST";
const HEALTH_DEADLINE_MS = 90_000;

export interface LaunchOptions {
  stateDir: string;
  port: number;
  /** The stand-in (or a tap in front of it) for the Bot API and the chat-completions model. */
  standIn: string;
  env?: Record<string, string>;
}

export interface Service {
  id: string;
  url: string;
  port: number;
  stateDir: string;
  /** This launch's output (stdout and stderr of tsx, wrangler and workerd). */
  logFile: string;
  child: ChildProcess;
  pid: number;
  /** Date.now() when the spawn happened and when /api/health first answered. */
  spawnedAt: number;
  readyAt: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const launched = new Set<Service>();
const allLogs: string[] = [];

/** Starts `tsx ops/start.ts` as its own process group and waits until /api/health answers (200 or 503). */
export async function launch(options: LaunchOptions): Promise<Service> {
  const { stateDir, port, standIn } = options;
  mkdirSync(stateDir, { recursive: true });
  const n = readdirSync(stateDir).filter((f) => /^service-\d+\.log$/.test(f)).length + 1;
  const logFile = `${stateDir}/service-${n}.log`;
  allLogs.push(logFile);
  const id = `${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  const fd = openSync(logFile, "a");
  const spawnedAt = Date.now();
  const child = spawn(`${ROOT}node_modules/.bin/tsx`, ["ops/start.ts"], {
    cwd: ROOT,
    detached: true,
    stdio: ["ignore", fd, fd],
    env: {
      ...process.env,
      PORT: String(port),
      SOMA_STATE_DIR: stateDir,
      WRANGLER_SEND_METRICS: "false",
      TELEGRAM_BOT_TOKEN: BOT_TOKEN,
      TELEGRAM_WEBHOOK_SECRET: WEBHOOK_SECRET,
      TELEGRAM_API_ROOT: standIn,
      AI_PROVIDER: "openai-compatible",
      AI_BASE_URL: `${standIn}/v1`,
      AI_MODEL: SERVICE_MODEL,
      EMBEDDING_PROVIDER: "local",
      // The embedded Postgres unless the test gives one (a DATABASE_URL in the project's .env must not win).
      DATABASE_URL: "",
      ...options.env,
      [MARKER]: id,
    },
  });
  closeSync(fd);
  if (child.pid === undefined) throw new Error(`could not spawn tsx ops/start.ts (see ${logFile})`);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const service: Service = { id, url: `http://127.0.0.1:${port}`, port, stateDir, logFile, child, pid: child.pid, spawnedAt, readyAt: 0, exited };
  launched.add(service);

  let gone: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  void exited.then((result) => (gone = result));
  const deadline = spawnedAt + HEALTH_DEADLINE_MS;
  for (;;) {
    if (gone) throw new Error(`npm start exited (${gone.code ?? gone.signal}) before /api/health answered\n${tail(logFile)}`);
    if (Date.now() > deadline) {
      await killEverything(service).catch(() => {});
      throw new Error(`/api/health did not answer within ${HEALTH_DEADLINE_MS / 1000} s\n${tail(logFile)}`);
    }
    try {
      const response = await fetch(`${service.url}/api/health`, { signal: AbortSignal.timeout(5000) });
      await response.arrayBuffer();
      if (response.status === 200 || response.status === 503) break;
    } catch {
      // not listening yet
    }
    await sleep(250);
  }
  service.readyAt = Date.now();
  return service;
}

export interface Proc {
  pid: number;
  ppid: number;
  pgrp: number;
  state: string;
  /** Start time in clock ticks since boot: a pid and this identify a process (pids are reused). */
  start: string;
  comm: string;
}

function readProc(pid: number): Proc | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = stat.lastIndexOf(")");
    const fields = stat.slice(close + 2).split(" ");
    return { pid, ppid: Number(fields[1]), pgrp: Number(fields[2]), state: fields[0]!, start: fields[19]!, comm: stat.slice(stat.indexOf("(") + 1, close) };
  } catch {
    return undefined;
  }
}

function allProcs(): Proc[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map((name) => readProc(Number(name)))
    .filter((p): p is Proc => p !== undefined);
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim().slice(0, 160);
  } catch {
    return "?";
  }
}

/** `pid` and all its descendants, walking parent pids. */
function tree(pid: number): Proc[] {
  const procs = allProcs();
  const result = procs.filter((p) => p.pid === pid);
  for (let i = 0; i < result.length; i++) for (const p of procs) if (p.ppid === result[i]!.pid) result.push(p);
  return result;
}

/** Processes (not zombies) whose environment carries this service's marker, wherever they sit in the tree. */
function marked(service: Service): Proc[] {
  const needle = `${MARKER}=${service.id}\0`;
  return allProcs().filter((p) => {
    if (p.state === "Z") return false;
    try {
      return readFileSync(`/proc/${p.pid}/environ`, "latin1").includes(needle);
    } catch {
      return false;
    }
  });
}

/** Every live process of the service: the tree under the child plus any marked process outside it. */
export function processesOf(service: Service): Proc[] {
  const byPid = new Map<number, Proc>();
  for (const p of [...tree(service.pid), ...marked(service)]) if (p.state !== "Z") byPid.set(p.pid, p);
  return [...byPid.values()];
}

function alive(p: Proc): boolean {
  const now = readProc(p.pid);
  return now !== undefined && now.start === p.start && now.state !== "Z";
}

export function describeProcs(procs: Proc[]): string {
  return procs.map((p) => `  ${p.pid} (${p.comm}, group ${p.pgrp}) ${cmdline(p.pid)}`).join("\n");
}

/** The wrangler CLI process of the service, if it is running. */
export function wranglerProcess(service: Service): Proc | undefined {
  return processesOf(service).find((p) => /wrangler-dist\/cli\.js|\.bin\/wrangler/.test(cmdline(p.pid)));
}

/**
 * SIGKILL to every process of the service at once. ops/start.ts runs wrangler in another process group,
 * so the tree is collected from /proc (frozen with SIGSTOP first so that nothing forks meanwhile), then
 * killed in one pass. Resolves once every one of them is gone and the port is free.
 */
export async function killEverything(service: Service): Promise<{ killed: string[] }> {
  const frozen = new Map<number, Proc>();
  for (let round = 0; round < 5; round++) {
    const found = processesOf(service).filter((p) => !frozen.has(p.pid));
    if (found.length === 0) break;
    for (const p of found) {
      signal(p.pid, "SIGSTOP");
      frozen.set(p.pid, p);
    }
  }
  for (const p of frozen.values()) signal(p.pid, "SIGKILL");
  await waitFor(async () => [...frozen.values()].every((p) => !alive(p)) && marked(service).length === 0, 15_000, "every killed process to be gone").catch(
    (error: Error) => {
      throw new Error(`${error.message}\nstill there:\n${describeProcs([...frozen.values()].filter(alive).concat(marked(service)))}`);
    },
  );
  await waitFor(() => portFree(service.port), 15_000, `port ${service.port} to be free`);
  await Promise.race([service.exited, sleep(5000)]);
  launched.delete(service);
  return { killed: [...frozen.values()].map((p) => p.comm) };
}

/**
 * Ctrl-C in the terminal: SIGINT to the service's process group (the foreground job), as a shell sends
 * it. Waits for npm start to exit and then for every process it had to be gone; throws, naming them,
 * if any survives (a bug in ops/start.ts: the test then fails, and stopAll kills the survivors).
 */
export async function interrupt(
  service: Service,
  { exitWithinMs = 30_000, goneWithinMs = 10_000 } = {},
): Promise<{ exitMs: number; allGoneMs: number; processes: number; code: number | null; signal: NodeJS.Signals | null }> {
  const before = processesOf(service);
  const started = Date.now();
  signal(-service.pid, "SIGINT");
  const result = await Promise.race([service.exited, sleep(exitWithinMs).then(() => undefined)]);
  if (!result) {
    throw new Error(`npm start did not exit within ${exitWithinMs / 1000} s of Ctrl-C; running:\n${describeProcs(processesOf(service))}\n${tail(service.logFile)}`);
  }
  const exitMs = Date.now() - started;
  const deadline = Date.now() + goneWithinMs;
  let survivors: Proc[] = [];
  for (;;) {
    survivors = [...before.filter(alive), ...marked(service).filter((m) => !before.some((b) => b.pid === m.pid))];
    if (survivors.length === 0 || Date.now() > deadline) break;
    await sleep(200);
  }
  if (survivors.length > 0) {
    throw new Error(`Ctrl-C left ${survivors.length} process(es) of npm start running ${goneWithinMs / 1000} s after it exited (${result.code ?? result.signal}):\n${describeProcs(survivors)}`);
  }
  if (!(await portFree(service.port))) throw new Error(`port ${service.port} is still taken after Ctrl-C`);
  const allGoneMs = Date.now() - started;
  launched.delete(service);
  return { exitMs, allGoneMs, processes: before.length, ...result };
}

/** Kills every service still running (afterEach), including processes that left their tree. */
export async function stopAll(): Promise<void> {
  const errors: unknown[] = [];
  for (const service of [...launched]) await killEverything(service).catch((error: unknown) => errors.push(error));
  for (const release of [...held.values()]) await release().catch((error: unknown) => errors.push(error));
  if (errors.length > 0) throw new AggregateError(errors, "stopping the services failed");
}

const tempDirs: string[] = [];

/** A fresh directory under the system's temp directory, removed by wrapUp unless the test failed. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(`${tmpdir()}/${prefix}`);
  tempDirs.push(dir);
  return dir;
}

/**
 * After a test (its services stopped): when it failed, the last lines of every log its services wrote,
 * its directories kept for a look; otherwise its directories (state, logs, ~40 MB each) are removed.
 */
export function wrapUp(failed: boolean, lines = 80): string {
  const text = failed
    ? [...allLogs.map((file) => `----- ${file} (last ${lines} lines) -----\n${tail(file, lines)}`), `(state and logs kept in ${tempDirs.join(", ")})`].join("\n")
    : "";
  if (!failed) for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.length = 0;
  allLogs.length = 0;
  return text;
}

export function tail(file: string, lines = 60): string {
  if (!existsSync(file)) return `(no log at ${file})`;
  return readFileSync(file, "utf8").split("\n").slice(-lines).join("\n");
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

export async function portFree(port: number): Promise<boolean> {
  const server = createTcpServer();
  const free = await new Promise<boolean>((resolve) => {
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => resolve(true));
  });
  if (free) await new Promise<void>((resolve) => server.close(() => resolve()));
  return free;
}

// ---------------------------------------------------------------------------------------------------
// Telegram and the stand-in

/** POSTs one Telegram update with a text message to the webhook; resolves to the HTTP status. */
export async function webhook(url: string, secret: string, chatId: number, updateId: number, text: string): Promise<number> {
  const response = await fetch(`${url}/api/messenger/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": secret },
    body: JSON.stringify({
      update_id: updateId,
      message: { message_id: updateId % 1_000_000, date: Math.floor(Date.now() / 1000), chat: { id: chatId, type: "private" }, from: { id: chatId, is_bot: false, first_name: "Tess" }, text },
    }),
    signal: AbortSignal.timeout(30_000),
  });
  await response.arrayBuffer();
  return response.status;
}

/** Texts of the sendMessage calls the stand-in answered for `chatId`, in arrival order. */
export async function sent(standIn: string, chatId: number): Promise<string[]> {
  const response = await fetch(`${standIn}/__calls?chat_id=${chatId}&method=sendMessage`);
  const calls = (await response.json()) as Array<{ payload: { text: string }; at: number }>;
  return calls.sort((a, b) => a.at - b.at).map((c) => c.payload.text);
}

/** Polls `check` until it returns something truthy; throws after `timeoutMs`. */
export async function waitFor<T>(check: () => T | Promise<T>, timeoutMs: number, what = "the condition", everyMs = 200): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ""}`);
    }
    await sleep(everyMs);
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A random Telegram chat id for one test (the stand-in is shared by the whole run). */
export function randomChatId(): number {
  return 620_000_000 + Math.floor(Math.random() * 9_000_000);
}

const held = new Map<string, () => Promise<void>>();

/** The model name every launched service asks the stand-in for: a "chat" hang matches only them. */
export const SERVICE_MODEL = "service-under-test";

/**
 * POST /__hang {target, match} at the stand-in: requests to `target` whose body contains `match` are
 * held. "chat" hangs match this harness's model name by default (so the Worker suite running beside
 * it is never held); Bot API hangs should match a chat id (`"chat_id":123`). A lock across test files
 * is held meanwhile: two files hanging and releasing the same requests would release each other's.
 * Returns the release (POST /__release, then the lock goes).
 */
export async function hang(standIn: string, target: string, match = target === "chat" ? `"model":"${SERVICE_MODEL}"` : "", waitMs = 120_000): Promise<() => Promise<void>> {
  const lock = `${tmpdir()}/soma-stand-in-hang-${new URL(standIn).port}-${`${target}-${match}`.replace(/\W/g, "_")}`;
  await waitFor(() => {
    try {
      mkdirSync(lock);
      writeFileSync(`${lock}/owner`, String(process.pid));
      return true;
    } catch {
      // Held: take it over only if its owner is gone.
      const owner = Number(readFileSyncOr(`${lock}/owner`, "0"));
      if (owner && !readProc(owner)) rmSync(lock, { recursive: true, force: true });
      return false;
    }
  }, waitMs, `the stand-in's "${target}" hang lock`);
  const key = `${standIn} ${target} ${match}`;
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    held.delete(key);
    try {
      await control(standIn, "/__release", target, match);
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  };
  held.set(key, release);
  try {
    await control(standIn, "/__hang", target, match);
  } catch (error) {
    await release().catch(() => {});
    throw error;
  }
  return release;
}

async function control(standIn: string, path: string, target: string, match: string): Promise<void> {
  const response = await fetch(`${standIn}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ target, match }) });
  if (!response.ok) throw new Error(`${path} ${target}: ${response.status}`);
  await response.arrayBuffer();
}

function readFileSyncOr(file: string, fallback: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return fallback;
  }
}

export interface TappedRequest {
  path: string;
  body: string;
  /** When the request arrived at the tap. */
  at: number;
  /** When the stand-in's answer went back, or when the client gave up (closed its connection) first. */
  answeredAt?: number;
  gaveUpAt?: number;
}

export interface Tap {
  url: string;
  requests: TappedRequest[];
  /** Chat-completion requests (arrived at or after `since`) whose last user message contains `text`. */
  modelRequests(text: string, since?: number): TappedRequest[];
  /**
   * What each memory_capture the model made was about: entity id (from the tool's result) → the name
   * it was called with, read from the conversations the model was sent. The stand-in model's reply to
   * "I read X" quotes the tool result ("Done. Tool said: {"entityId":…}"), not X itself.
   */
  capturedNames(): Map<string, string>;
  /** Bot API calls of `method` to `chatId` that arrived (answered, held, or abandoned). */
  botAttempts(method: string, chatId: number): TappedRequest[];
  stop(): Promise<void>;
}

/**
 * An HTTP forwarder in front of the stand-in that records every request on arrival. A client that
 * gives up closes its connection to the tap, and the tap then drops its own request to the stand-in,
 * so the stand-in sees exactly what it would have seen directly.
 */
export async function startTap(standIn: string): Promise<Tap> {
  const upstream = new URL(standIn);
  const requests: TappedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const record: TappedRequest = { path: req.url ?? "/", body: body.toString("utf8"), at: Date.now() };
      requests.push(record);
      const forward = httpRequest(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host, connection: "close" }, agent: false },
        (answer: IncomingMessage) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          answer.on("end", () => (record.answeredAt ??= Date.now()));
        },
      );
      forward.on("error", () => {
        if (!res.headersSent) res.writeHead(502).end();
        else res.destroy();
      });
      res.on("close", () => {
        if (!res.writableFinished) {
          record.gaveUpAt ??= Date.now();
          forward.destroy();
        }
      });
      forward.end(body);
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const lastUserText = (body: string): string => {
    try {
      const { messages } = JSON.parse(body) as { messages: Array<{ role: string; content: unknown }> };
      const user = [...messages].reverse().find((m) => m.role === "user");
      return typeof user?.content === "string" ? user.content : JSON.stringify(user?.content ?? "");
    } catch {
      return "";
    }
  };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    modelRequests: (text, since = 0) =>
      requests.filter((r) => r.at >= since && r.path.endsWith("/chat/completions") && lastUserText(r.body).includes(text)),
    capturedNames: () => {
      const names = new Map<string, string>();
      for (const r of requests.filter((q) => q.path.endsWith("/chat/completions"))) {
        try {
          const { messages } = JSON.parse(r.body) as { messages: Array<{ role: string; content?: unknown; tool_call_id?: string; tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }> }> };
          const calls = new Map<string, string>();
          for (const m of messages) {
            for (const call of m.tool_calls ?? []) {
              if (call.function.name === "memory_capture") calls.set(call.id, (JSON.parse(call.function.arguments) as { name: string }).name);
            }
            const name = m.role === "tool" && m.tool_call_id ? calls.get(m.tool_call_id) : undefined;
            const entity = name ? /"entityId":"([0-9a-f-]{36})"/.exec(typeof m.content === "string" ? m.content : JSON.stringify(m.content))?.[1] : undefined;
            if (name && entity) names.set(entity, name);
          }
        } catch {
          // not a chat request this tap understands
        }
      }
      return names;
    },
    botAttempts: (method, chatId) =>
      requests.filter((r) => r.path.endsWith(`/${method}`) && (() => {
        try {
          return (JSON.parse(r.body) as { chat_id?: unknown }).chat_id === chatId;
        } catch {
          return false;
        }
      })()),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function health(url: string): Promise<number> {
  const response = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(10_000) });
  await response.arrayBuffer();
  return response.status;
}

/**
 * Which of `names` a reply is about: one it names (after the welcome, which mentions Dune), or the one
 * whose memory_capture produced the entity id the reply quotes. undefined for anything else.
 */
export function subjectOf(text: string, tap: Tap, names: readonly string[]): string | undefined {
  const body = text.startsWith(WELCOME) ? text.slice(WELCOME.length) : text;
  const named = names.filter((name) => body.includes(name));
  if (named.length === 1) return named[0];
  const entity = /"entityId":"([0-9a-f-]{36})"/.exec(body)?.[1];
  const captured = entity ? tap.capturedNames().get(entity) : undefined;
  return captured !== undefined && names.includes(captured) ? captured : undefined;
}
