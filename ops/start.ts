// `npm start`: Soma on this machine with no account and no network.
//   0. PORT checked free (another `npm start` on it is said so at once), then the web app built
//   1. Postgres: DATABASE_URL if set, else the embedded one (PGlite, data in .soma/pgdata)
//   2. `npm run db:setup` against it (idempotent), which also sets up the Worker's login role; the
//      Worker's local Hyperdrive connects as that role, never as the owner
//   3. `wrangler dev --local` on PORT (default 8787) with local embeddings and, unless the environment says
//      otherwise, a model already running on this machine (ops/local-model.ts) or else the offline one;
//      values in the process environment override .env
// Ctrl-C stops wrangler (its whole process group: workerd and esbuild too) and the embedded Postgres.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { isAbsolute, relative, resolve as absolutePath } from "node:path";
import { fileURLToPath } from "node:url";
import { CONFIG_KEYS } from "../platform/config";
import { stateDirOf } from "./cli";
import { DEFAULT_WORKER_ROLE, setupDatabase, workerDatabaseUrl } from "./db-setup";
import { formatEnvFile, readEnvFile } from "./dotenv";
import { localVapidKeys } from "./push-keys";
import { findLocalModel, LOCAL_MODEL_SERVERS } from "./local-model";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "./embedded-postgres";

const root = fileURLToPath(new URL("..", import.meta.url));
/** The file in a state directory that says which process runs Soma over it. */
const STATE_LOCK = "running.pid";

/** Settings that differ from production when running locally; any of them can be overridden. */
const LOCAL_DEFAULTS = {
  ENVIRONMENT: "development",
  AI_PROVIDER: "offline",
  EMBEDDING_PROVIDER: "local",
} as const;

export interface Running {
  url: string;
  databaseUrl: string;
  stop(): Promise<void>;
  exited: Promise<number>;
}

/**
 * Soma on this machine. `command` is how the person started it (`npm start`, `npm run telegram:local`),
 * for what a refusal tells them to run instead.
 */
export async function start(environment: NodeJS.ProcessEnv = process.env, log = console.log, command = "npm start"): Promise<Running> {
  const settings = settingsOf(environment);
  const port = portOf(settings);
  await assertPortFree(port, command);
  const stateDir = stateDirOf(settings);
  mkdirSync(stateDir, { recursive: true });
  const release = lockState(stateDir, command);

  let embedded: EmbeddedPostgres | undefined;
  let databaseUrl = settings.DATABASE_URL;
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres({ dataDir: `${stateDir}/pgdata`, port: Number(settings.SOMA_DB_PORT ?? 0) }).catch(
      (error: unknown) => {
        release();
        throw error;
      },
    );
    databaseUrl = embedded.url;
  }
  // The Worker connects as its login role, as it does through Hyperdrive in production.
  const worker = {
    role: settings.DATABASE_WORKER_ROLE || (embedded ? DEFAULT_WORKER_ROLE : localWorkerRole(databaseUrl)),
    password:
      settings.DATABASE_WORKER_PASSWORD || keptSecret(stateDir, "database-worker-password", () => randomBytes(18).toString("base64url")),
  };
  // What the setup did is told only when it fails: a healthy start prints one banner (issue 26).
  const setupLines: string[] = [];
  try {
    await setupDatabase(databaseUrl, (line) => setupLines.push(line), { worker });
  } catch (error) {
    for (const line of setupLines) log(`db:setup  ${line}`);
    await embedded?.stop();
    release();
    throw error;
  }
  const hyperdriveUrl = workerDatabaseUrl(databaseUrl, worker);

  const url = `http://127.0.0.1:${port}`;
  const workerValues: Record<string, string> = { ...LOCAL_DEFAULTS, APP_BASE_URL: url };
  // No model chosen: a real one already running on this machine is used, else the offline one.
  const found = settings.AI_PROVIDER === undefined ? await findLocalModel(localModelServers(settings.SOMA_LOCAL_MODEL_PORTS)) : null;
  if (found) Object.assign(workerValues, { AI_PROVIDER: "openai-compatible", AI_BASE_URL: found.baseUrl, AI_MODEL: found.model });
  for (const key of CONFIG_KEYS) if (settings[key] !== undefined) workerValues[key] = settings[key];
  // Web Push works locally with no setup: a key pair made at first start and kept with the state, and a
  // key sealing the subscriptions (and Gmail's tokens) at rest, kept the same way.
  workerValues.TOKEN_ENCRYPTION_KEY ||= keptSecret(stateDir, "token-encryption-key", () => randomBytes(32).toString("base64"));
  if (!workerValues.VAPID_PUBLIC_KEY && !workerValues.VAPID_PRIVATE_KEY) {
    const keys = await localVapidKeys(stateDir);
    Object.assign(workerValues, { VAPID_PUBLIC_KEY: keys.publicKey, VAPID_PRIVATE_KEY: keys.privateKey });
  }
  // Without a signing key the workflows talk to a local Inngest dev server (npx inngest-cli dev).
  if (!workerValues.INNGEST_SIGNING_KEY) workerValues.INNGEST_DEV ??= "1";
  const envFile = `${stateDir}/worker.env`;
  writeFileSync(envFile, formatEnvFile(workerValues), { mode: 0o600 });

  const wrangler = spawn(
    `${root}node_modules/.bin/wrangler`,
    [
      "dev",
      "--local",
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      // The Worker sees the URL it is served at (not the production route's host, wrangler's default):
      // the MCP server's OAuth metadata and token audience name http://127.0.0.1:PORT, as clients do.
      "--local-upstream",
      `127.0.0.1:${port}`,
      "--upstream-protocol",
      "http",
      "--env-file",
      envFile,
      "--persist-to",
      `${stateDir}/wrangler`,
      "--show-interactive-dev-session=false",
      // The DevTools inspector on the port SOMA_INSPECTOR_PORT names (9229 for `chrome://inspect`), else
      // on one the kernel picks as it binds: wrangler's own default takes 9229 when it looks free, and two
      // services started at the same moment both saw it free and one failed to bind it (a CI run).
      "--inspector-port",
      settings.SOMA_INSPECTOR_PORT ?? "0",
      // The hourly Cron Trigger (the OAuth upkeep) does not fire locally; this lets one run it by hand
      // (GET /__scheduled, wrangler's local route) instead of a warning on every start.
      "--test-scheduled",
      "--log-level",
      settings.WRANGLER_LOG ?? "warn",
    ],
    {
      cwd: root,
      detached: true, // its own process group, so stopping it also stops workerd and esbuild
      // Passed through as it comes, and its last words kept: a wrangler that exits before the Worker
      // answers is reported with them.
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        CLOUDFLARE_HYPERDRIVE_LOCAL_CONNECTION_STRING_HYPERDRIVE: hyperdriveUrl,
        WRANGLER_SEND_METRICS: "false",
        // Local runs use wrangler's placeholder Request.cf instead of fetching Cloudflare's (offline, that
        // fetch fails with a stack trace on every start; nothing here reads request.cf).
        CLOUDFLARE_CF_FETCH_ENABLED: "false",
        SOMA_DATABASE_ADDRESS: databaseAddress(databaseUrl),
        NODE_OPTIONS: [process.env.NODE_OPTIONS, `--require ${root}ops/wrangler-guard.cjs`].filter(Boolean).join(" "),
      },
    },
  );
  let lastWords = "";
  const passOn = (out: NodeJS.WriteStream) => (chunk: Buffer) => {
    out.write(chunk);
    lastWords = (lastWords + chunk.toString()).slice(-4000);
  };
  wrangler.stdout?.on("data", passOn(process.stdout));
  wrangler.stderr?.on("data", passOn(process.stderr));
  let exitedWith = "";
  const exited = new Promise<number>((resolve) =>
    wrangler.once("exit", (code, signal) => {
      exitedWith = signal ? `signal ${signal}` : `code ${code}`;
      resolve(code ?? (signal ? 1 : 0));
    }),
  );

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await stopGroup(wrangler, exited);
      await embedded?.stop();
      release();
    })());
  void exited.then(async () => {
    await embedded?.stop();
    release();
  });

  try {
    await waitForHealth(url, exited);
  } catch (error) {
    await stop();
    if (!exitedWith || !(error instanceof Error)) throw error;
    throw new Error(`${error.message} (${exitedWith}); its last output:\n${lastWords.trim() || "(none)"}`);
  }
  const database = embedded
    ? `embedded Postgres (PGlite with pgvector and pg_trgm), its files in ${shortPath(`${stateDir}/pgdata`)}`
    : redact(databaseUrl);
  const chosen = `${workerValues.AI_PROVIDER}${workerValues.AI_MODEL ? ` · ${workerValues.AI_MODEL}` : ""}${workerValues.AI_BASE_URL ? ` at ${workerValues.AI_BASE_URL}` : ""}`;
  const model =
    workerValues.AI_PROVIDER === "offline"
      ? "offline: built in, deterministic, no network. For a real model: AI_PROVIDER=openai-compatible AI_BASE_URL=… AI_MODEL=… (README, Try it)"
      : found
        ? `${chosen} (${found.server}, found on this machine; AI_PROVIDER=offline npm start for the built-in model)`
        : chosen;
  log(`Soma is running at ${url}`);
  log(`  sign in   ${url}/login ("Sign in as the developer")`);
  log(`  database  ${database}`);
  log(`  model     ${model}`);
  if (workerValues.INNGEST_DEV) log(`  workflows ${await inngestDevServer(workerValues.INNGEST_DEV)}`);
  log("  stop      Ctrl-C");
  return { url, databaseUrl, stop, exited };
}

/**
 * The Worker's login role on a server npm start was given (DATABASE_URL), unless DATABASE_WORKER_ROLE
 * names one: a role of that database's own. A role belongs to the whole server, and npm start sets its
 * password (the one kept in the state directory), so a shared `soma_worker` would have had its password
 * changed under every other database on the server that logs in with it. The embedded Postgres is
 * npm start's alone and keeps `soma_worker`.
 */
export function localWorkerRole(databaseUrl: string): string {
  const database = decodeURIComponent(new URL(databaseUrl).pathname.slice(1)) || "postgres";
  return `${DEFAULT_WORKER_ROLE}_${database.toLowerCase().replace(/[^a-z0-9_]/g, "_")}`.slice(0, 63);
}

/** .env under the environment's own values. */
function settingsOf(environment: NodeJS.ProcessEnv): Record<string, string> {
  return { ...readEnvFile(`${root}.env`), ...definedValues(environment) };
}

const portOf = (settings: Record<string, string>) => Number(settings.PORT ?? 8787);

/**
 * Refuses a port something already listens on (another `npm start`, most likely) before anything is
 * started or built: otherwise the health wait was answered by that other server, the banner said Soma
 * was running, and wrangler then failed to bind and pointed at its own `--port` flag.
 */
export async function assertPortFree(port: number, command = "npm start"): Promise<void> {
  const server = createServer();
  const free = await new Promise<boolean>((resolve) => {
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => resolve(true));
  });
  if (free) {
    await new Promise((resolve) => server.close(resolve));
    return;
  }
  throw new Error(`port ${port} is in use (another npm start?). Stop it, or start on another port: PORT=${port + 1} ${command}`);
}

/** The state directories this process holds (a pid of its own in a lock it does not hold is a stale one's, reused). */
const held = new Set<string>();

/** The pid in a state directory's lock, while its process lives (and holds it). */
function stateHolder(stateDir: string): number | undefined {
  const file = `${stateDir}/${STATE_LOCK}`;
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, "utf8").trim());
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  if (pid === process.pid) return held.has(absolutePath(stateDir)) ? pid : undefined;
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM" ? pid : undefined;
  }
  return zombie(pid) ? undefined : pid;
}

/**
 * Killed but not yet reaped: a process whose parent died with it (kill -9 of the whole tree) is left
 * to pid 1, which in a container may never reap it, and it still answers kill(pid, 0). Linux says so
 * in /proc/<pid>/stat (state Z); elsewhere there is no /proc and a process that answers is alive.
 */
function zombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return /^[ZX]/.test(stat.slice(stat.lastIndexOf(")") + 2));
  } catch {
    return false;
  }
}

const stateInUse = (stateDir: string, pid: number, command: string) =>
  new Error(
    `another npm start is running over ${shortPath(stateDir)} (process ${pid}). Stop it, or give this one a state of its own: SOMA_STATE_DIR=… ${command}`,
  );

/**
 * One Soma per state directory: a second one on the same .soma (another port, or started the same
 * instant) opened the same embedded Postgres files, rewrote the first's Worker settings under it and
 * took its database's port file with it when it stopped. The lock is a file made exclusively, holding
 * the pid; one left by a process that is gone (kill -9, a power cut) is taken over. Returns its release.
 */
function lockState(stateDir: string, command: string): () => void {
  const file = `${stateDir}/${STATE_LOCK}`;
  for (;;) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: "wx" });
      held.add(absolutePath(stateDir));
      return () => {
        if (!held.delete(absolutePath(stateDir))) return;
        if (existsSync(file) && readFileSync(file, "utf8").trim() === String(process.pid)) rmSync(file, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = stateHolder(stateDir);
      if (holder !== undefined) throw stateInUse(stateDir, holder, command);
      rmSync(file, { force: true });
    }
  }
}

async function waitForHealth(url: string, exited: Promise<number>): Promise<void> {
  let done = false;
  void exited.then(() => (done = true));
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (done) throw new Error("wrangler dev exited before the Worker answered");
    try {
      const response = await fetch(`${url}/api/health`);
      if (response.status === 200 || response.status === 503) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`the Worker did not answer at ${url} within 90 s`);
}

async function stopGroup(child: ChildProcess, exited: Promise<number>): Promise<void> {
  if (child.exitCode !== null || child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {
    return;
  }
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // already gone
    }
  }, 5000);
  await exited;
  clearTimeout(timer);
}

/** A local secret kept in the state directory (the login role's password, the token key): made once, then read. */
function keptSecret(stateDir: string, name: string, make: () => string): string {
  const file = `${stateDir}/${name}`;
  if (!existsSync(file)) writeFileSync(file, make(), { mode: 0o600 });
  return readFileSync(file, "utf8").trim();
}

/** What the banner says of the Inngest dev server the workflows talk to in dev mode (INNGEST_DEV). */
async function inngestDevServer(dev: string): Promise<string> {
  const address = /^https?:/.test(dev) ? dev.replace(/\/$/, "") : "http://127.0.0.1:8288";
  try {
    await fetch(address, { signal: AbortSignal.timeout(700) });
    return `the Inngest dev server at ${address}`;
  } catch {
    return "none running: Soma delivers reminders itself; the 08:00 brief and the Sunday review wait for one (npx inngest-cli dev; README, Background workflows)";
  }
}

/** The local model servers looked for: the usual ones, or the ports SOMA_LOCAL_MODEL_PORTS lists ("11434,1234"). */
function localModelServers(ports: string | undefined): ReadonlyArray<{ server: string; port: number }> {
  if (!ports) return LOCAL_MODEL_SERVERS;
  return ports
    .split(",")
    .map(Number)
    .filter((port) => Number.isInteger(port) && port > 0)
    .map((port) => LOCAL_MODEL_SERVERS.find((s) => s.port === port) ?? { server: "an OpenAI-compatible server", port });
}

/** `path` relative to the project when it lies inside it (.soma/pgdata), else as it is. */
function shortPath(path: string): string {
  const inside = relative(root, path);
  return inside && !inside.startsWith("..") && !isAbsolute(inside) ? inside : path;
}

function definedValues(environment: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(environment).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

/** host:port of a postgres:// URL, as the Hyperdrive proxy dials it. */
function databaseAddress(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || "5432"}`;
}

function redact(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:***@");
}

/** What `npm start` does before `start`: the port and the state checked free, then the web app built (`npm run build:web`). */
export async function buildForStart(environment: NodeJS.ProcessEnv = process.env, command = "npm start"): Promise<void> {
  const settings = settingsOf(environment);
  await assertPortFree(portOf(settings), command);
  const holder = stateHolder(stateDirOf(settings));
  if (holder !== undefined) throw stateInUse(stateDirOf(settings), holder, command);
  const build = spawnSync("npm", ["run", "--silent", "build:web"], { cwd: root, stdio: "inherit" });
  if (build.status !== 0) throw new Error(`the web app's build failed (npm run build:web, exit ${build.status})`);
}

async function main(): Promise<Running> {
  if (process.argv.includes("--build-web")) await buildForStart();
  return start();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().then(
    (running) => {
      const shutdown = () => void running.stop().then(() => process.exit(0));
      process.once("SIGINT", shutdown);
      process.once("SIGTERM", shutdown);
      // wrangler gone (crashed, or stopped by the signal above): close the embedded Postgres first.
      void running.exited.then(async (code) => {
        await running.stop();
        process.exit(code);
      });
    },
    (error: unknown) => {
      console.error(`npm start failed: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    },
  );
}
