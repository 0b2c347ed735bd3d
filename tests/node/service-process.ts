// Harness for tests that run Soma the way a person does: `npm start` (tsx ops/start.ts) as a separate
// process tree (tsx → node → embedded Postgres, wrangler → workerd, esbuild), killed, interrupted and
// started again over the same state directory. Linux only: process trees are read from /proc. This is
// the processes; what a test sends a service and sees at the stand-in is in service-http.ts.
//
//   launch         spawn the service in its own process group, wait for /api/health (200 or 503)
//   killEverything SIGKILL every process of the service at once (a power cut, an OOM kill)
//   interrupt      Ctrl-C: SIGINT to the service's process group, then check nothing is left behind
//   stopAll        afterEach: kill whatever the test started, release what it held at the stand-in
//   tempDir/wrapUp a test's directories, removed after it unless it failed (then its logs are printed)
//
// Every process of a service carries SOMA_SERVICE_UNDER_TEST=<id> in its environment (children inherit
// it), so one that left the tree (re-parented after its parent died) is still found and reported.
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer as createTcpServer } from "node:net";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { sleep, waitFor } from "./wait";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BOT_TOKEN = "737373:service-test-token";
export const WEBHOOK_SECRET = "service-test-secret";
const MARKER = "SOMA_SERVICE_UNDER_TEST";
const HEALTH_DEADLINE_MS = 90_000;

/** The model name every launched service asks the stand-in for: a "chat" hang matches only them. */
export const SERVICE_MODEL = "service-under-test";

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
/**
 * One of the project's commands (`tsx ops/<script>.ts …`) as a newcomer's shell runs it: the project's
 * directory, only PATH and HOME of this process's environment, plus `env`; resolves when it exits.
 * Asynchronous, so that servers of this process (an embedded Postgres, a port held) go on answering it.
 */
export function runCommand(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(`${ROOT}node_modules/.bin/tsx`, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, stdout, stderr })));
}

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
  const service: Service = {
    id,
    url: `http://127.0.0.1:${port}`,
    port,
    stateDir,
    logFile,
    child,
    pid: child.pid,
    spawnedAt,
    readyAt: 0,
    exited,
  };
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

export function readProc(pid: number): Proc | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = stat.lastIndexOf(")");
    const fields = stat.slice(close + 2).split(" ");
    return {
      pid,
      ppid: Number(fields[1]),
      pgrp: Number(fields[2]),
      state: fields[0]!,
      start: fields[19]!,
      comm: stat.slice(stat.indexOf("(") + 1, close),
    };
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
function processesOf(service: Service): Proc[] {
  const byPid = new Map<number, Proc>();
  for (const p of [...tree(service.pid), ...marked(service)]) if (p.state !== "Z") byPid.set(p.pid, p);
  return [...byPid.values()];
}

function alive(p: Proc): boolean {
  const now = readProc(p.pid);
  return now !== undefined && now.start === p.start && now.state !== "Z";
}

function describeProcs(procs: Proc[]): string {
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
  await waitFor(
    async () => [...frozen.values()].every((p) => !alive(p)) && marked(service).length === 0,
    15_000,
    "every killed process to be gone",
  ).catch((error: Error) => {
    throw new Error(`${error.message}\nstill there:\n${describeProcs([...frozen.values()].filter(alive).concat(marked(service)))}`);
  });
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
    throw new Error(
      `npm start did not exit within ${exitWithinMs / 1000} s of Ctrl-C; running:\n${describeProcs(processesOf(service))}\n${tail(service.logFile)}`,
    );
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
    throw new Error(
      `Ctrl-C left ${survivors.length} process(es) of npm start running ${goneWithinMs / 1000} s after it exited (${result.code ?? result.signal}):\n${describeProcs(survivors)}`,
    );
  }
  if (!(await portFree(service.port))) throw new Error(`port ${service.port} is still taken after Ctrl-C`);
  const allGoneMs = Date.now() - started;
  launched.delete(service);
  return { exitMs, allGoneMs, processes: before.length, ...result };
}

/**
 * What a test holds at the stand-in, by key (hang in service-http.ts adds its release here, and the
 * release removes it): stopAll releases whatever the test did not.
 */
export const held = new Map<string, () => Promise<void>>();

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
    ? [
        ...allLogs.map((file) => `----- ${file} (last ${lines} lines) -----\n${tail(file, lines)}`),
        `(state and logs kept in ${tempDirs.join(", ")})`,
      ].join("\n")
    : "";
  if (!failed) for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.length = 0;
  allLogs.length = 0;
  return text;
}

function tail(file: string, lines = 60): string {
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

async function portFree(port: number): Promise<boolean> {
  const server = createTcpServer();
  const free = await new Promise<boolean>((resolve) => {
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => resolve(true));
  });
  if (free) await new Promise<void>((resolve) => server.close(() => resolve()));
  return free;
}
