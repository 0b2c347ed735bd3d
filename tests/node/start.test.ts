// Guards `npm start`: embedded or given Postgres, the setup, wrangler dev with the environment's values,
// /api/health turning to 503 db:false when the database goes away, and a clean stop.
import { mkdtempSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { afterAll, describe, expect, it } from "vitest";
import { startEmbeddedPostgres } from "../../ops/embedded-postgres";
import { start, type Running } from "../../ops/start";
import { freePort } from "./helpers";

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
    const stateDir = mkdtempSync(`${tmpdir()}/soma-start-`);
    const app = await start(
      { PORT: String(await freePort()), DATABASE_URL: database.url, SOMA_STATE_DIR: stateDir, TELEGRAM_BOT_USERNAME: "soma_test_bot" },
      () => {},
    );
    running.push(app);

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

  it("starts the embedded Postgres when no DATABASE_URL is set, keeping its data in the state directory", async () => {
    const stateDir = mkdtempSync(`${tmpdir()}/soma-start-`);
    const app = await start({ PORT: String(await freePort()), SOMA_STATE_DIR: stateDir }, () => {});
    running.push(app);
    expect(await health(app.url)).toMatchObject({ status: 200, body: { ok: true, db: true } });
    expect(existsSync(`${stateDir}/pgdata/PG_VERSION`)).toBe(true);
    await app.stop();
  });
});
