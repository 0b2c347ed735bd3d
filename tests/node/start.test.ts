// Guards `npm start`: embedded or given Postgres, the setup, wrangler dev with the environment's values,
// /api/health turning to 503 db:false when the database goes away, and a clean stop.
import { spawnSync } from "node:child_process";
import { mkdtempSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import postgres from "postgres";
import { afterAll, describe, expect, it } from "vitest";
import { startEmbeddedPostgres } from "../../ops/embedded-postgres";
import { localWorkerRole, start, type Running } from "../../ops/start";
import { freePort } from "./helpers";
import { ROOT, runCommand } from "./service-process";

async function health(url: string) {
  const response = await fetch(`${url}/api/health`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const running: Running[] = [];
afterAll(async () => {
  for (const r of running) await r.stop();
});

describe("npm start", () => {
  it("runs on a given DATABASE_URL, passes the environment through, and reports the database going away", async () => {
    // On disk, so that it comes back with its roles (the Worker's login among them), as a restarted server does.
    const dataDir = mkdtempSync(`${tmpdir()}/soma-start-db-`);
    const database = await startEmbeddedPostgres({ dataDir });
    // The server's soma_worker, as another database's setup left it: npm start leaves it be.
    const owner = postgres(database.url, { max: 1, onnotice: () => {} });
    const verifierOf = async (role: string) =>
      (await owner<{ rolpassword: string | null }[]>`select rolpassword from pg_authid where rolname = ${role}`)[0]?.rolpassword;
    await owner.unsafe("create role soma_worker login password 'another-database-s-password'");
    const shared = await verifierOf("soma_worker");
    const stateDir = mkdtempSync(`${tmpdir()}/soma-start-`);
    const app = await start(
      { PORT: String(await freePort()), DATABASE_URL: database.url, SOMA_STATE_DIR: stateDir, TELEGRAM_BOT_USERNAME: "soma_test_bot" },
      () => {},
    );
    running.push(app);
    const role = localWorkerRole(database.url);
    expect(role).toMatch(/^soma_worker_[a-z0-9_]+$/);
    expect(await verifierOf(role)).toMatch(/^SCRAM-SHA-256\$/);
    expect(await verifierOf("soma_worker")).toBe(shared);
    await owner.end();

    expect(await health(app.url)).toMatchObject({ status: 200, body: { ok: true, service: "web", db: true } });
    const login = await fetch(`${app.url}/login`);
    expect(login.status).toBe(200);
    expect(await login.text()).toContain("@soma_test_bot");

    await database.stop();
    for (let i = 0; i < 2; i++) {
      const started = Date.now();
      expect(await health(app.url)).toMatchObject({ status: 503, body: { ok: false, db: false } });
      expect(Date.now() - started).toBeLessThan(2500);
    }

    // The database comes back on the same address: health recovers without a restart.
    const revived = await startEmbeddedPostgres({ dataDir, port: database.port });
    try {
      expect(await health(app.url)).toMatchObject({ status: 200, body: { ok: true, db: true } });
    } finally {
      await revived.stop();
    }

    await app.stop();
    expect(await app.exited).toBeTypeOf("number");
    await expect(fetch(`${app.url}/api/health`)).rejects.toThrow();
  });

  it("starts the embedded Postgres when no DATABASE_URL is set, keeping its data in the state directory; one Soma per state", async () => {
    const stateDir = mkdtempSync(`${tmpdir()}/soma-start-`);
    // Left by a process that is gone (kill -9): taken over.
    writeFileSync(`${stateDir}/running.pid`, `${deadPid()}\n`);
    const app = await start({ PORT: String(await freePort()), SOMA_STATE_DIR: stateDir }, () => {});
    running.push(app);
    expect(await health(app.url)).toMatchObject({ status: 200, body: { ok: true, db: true } });
    expect(existsSync(`${stateDir}/pgdata/PG_VERSION`)).toBe(true);
    expect(readFileSync(`${stateDir}/running.pid`, "utf8").trim()).toBe(String(process.pid));

    // A second one over the same state, on another port: refused before it builds or opens anything,
    // whether as the command or as start() itself; the first keeps its database and its port file.
    const refusal = `another npm start is running over ${stateDir} (process ${process.pid}). Stop it, or give this one a state of its own: SOMA_STATE_DIR=… npm start`;
    const built = statSync(`${ROOT}web/dist/index.html`).mtimeMs;
    const second = await startCommand({ PORT: String(await freePort()), SOMA_STATE_DIR: stateDir });
    expect([second.code, second.output.trim()]).toEqual([1, `npm start failed: ${refusal}`]);
    expect(statSync(`${ROOT}web/dist/index.html`).mtimeMs).toBe(built);
    await expect(start({ PORT: String(await freePort()), SOMA_STATE_DIR: stateDir }, () => {})).rejects.toThrow(refusal);
    expect(existsSync(`${stateDir}/pgdata.port`)).toBe(true);
    expect(await health(app.url)).toMatchObject({ status: 200, body: { ok: true, db: true } });

    await app.stop();
    expect(existsSync(`${stateDir}/running.pid`)).toBe(false);
  });

  it("refuses a port another server answers on, at once: nothing built, no database started, no banner", async () => {
    // Another Soma, as far as a health check can tell: before, its answer made the banner say Soma was
    // running, the web build rewrote web/dist under it, and then wrangler failed to bind.
    const other = createServer((_, response) => response.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}'));
    const port = await freePort();
    await new Promise<void>((resolve) => other.listen(port, "127.0.0.1", resolve));
    const stateDir = mkdtempSync(`${tmpdir()}/soma-start-busy-`);
    const built = statSync(`${ROOT}web/dist/index.html`).mtimeMs;
    try {
      const { code, output } = await startCommand({ PORT: String(port), SOMA_STATE_DIR: stateDir });
      expect(code).toBe(1);
      expect(output.trim()).toBe(
        `npm start failed: port ${port} is in use (another npm start?). Stop it, or start on another port: PORT=${port + 1} npm start`,
      );
      expect(existsSync(`${stateDir}/pgdata`)).toBe(false);
      expect(statSync(`${ROOT}web/dist/index.html`).mtimeMs).toBe(built);
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });
});

/** `npm start` as the command runs it (`tsx ops/start.ts --build-web`); its output, both streams. */
async function startCommand(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const { code, stdout, stderr } = await runCommand(["ops/start.ts", "--build-web"], env);
  return { code, output: stdout + stderr };
}

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync("true");
  return child.pid!;
}
