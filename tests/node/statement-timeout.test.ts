// Guards the server-side statement deadline: every transaction of a Database sets statement_timeout
// (transaction-locally), so a runaway statement is cancelled by Postgres itself with SQLSTATE 57014.
// The embedded test Postgres (PGlite, WASM) keeps the setting but has no timer signals to enforce it,
// so this runs against a real PostgreSQL when one is installed (Debian's postgresql package: initdb
// under /usr/lib/postgresql/<n>/bin), and is skipped otherwise.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../../db/database";
import { DeadlineError } from "../../db/deadline";
import { freePort } from "./helpers";

/** The bin directory of an installed PostgreSQL, and how to run its programs (never as root). */
function findPostgres(): { bin: string; run: (program: string, args: string[]) => void } | null {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const version = readdirSync(root).sort((a, b) => Number(b) - Number(a)).find((v) => existsSync(join(root, v, "bin", "initdb")));
  if (!version) return null;
  const bin = join(root, version, "bin");
  const asRoot = process.getuid?.() === 0;
  if (asRoot && spawnSync("id", ["postgres"]).status !== 0) return null;
  const run = (program: string, args: string[]) => {
    const [command, argv] = asRoot ? ["runuser", ["-u", "postgres", "--", join(bin, program), ...args]] : [join(bin, program), args];
    execFileSync(command as string, argv as string[], { stdio: "ignore" });
  };
  return { bin, run };
}

const installed = findPostgres();

describe.skipIf(!installed)("statement_timeout on a real PostgreSQL", () => {
  let dir = "";
  let url = "";

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "soma-pg-"));
    chmodSync(dir, 0o777);
    const port = await freePort();
    installed!.run("initdb", ["-D", join(dir, "data"), "-A", "trust", "-U", "postgres"]);
    installed!.run("pg_ctl", ["-D", join(dir, "data"), "-w", "-l", join(dir, "log"), "-o", `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, "start"]);
    url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    const owner = postgres(url, { max: 1, onnotice: () => {} });
    await owner`create role soma_system`;
    await owner.end();
  }, 60_000);

  afterAll(() => {
    if (!dir) return;
    try {
      installed!.run("pg_ctl", ["-D", join(dir, "data"), "-m", "immediate", "stop"]);
    } catch {
      // not started
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("cancels a statement that runs past statementTimeoutMs with SQLSTATE 57014", async () => {
    const db = new Database(url, { max: 1, statementTimeoutMs: 200 });
    try {
      const started = Date.now();
      const error = await db.withSystem((tx) => tx.execute(sql`select pg_sleep(5)`)).catch((e: unknown) => e);
      const elapsed = Date.now() - started;
      // drizzle wraps the driver's error: the PostgresError is its cause.
      expect((error as { cause?: { code?: string } }).cause?.code).toBe("57014");
      expect(elapsed).toBeLessThan(2_000);
      // The connection is fine afterwards, and the default applies to a Database without the option.
      const rows = (await new Database(url, { max: 1 }).withSystem((tx) => tx.execute(sql`select current_setting('statement_timeout') as timeout`))) as unknown as Array<{ timeout: string }>;
      expect(rows).toEqual([{ timeout: "10s" }]);
    } finally {
      await db.close();
    }
  });

  it("a transaction that outlasts transactionDeadlineMs rejects with DeadlineError, and the Database recovers", async () => {
    const db = new Database(url, { max: 1, transactionDeadlineMs: 300 });
    try {
      const started = Date.now();
      const error = await db.withSystem((tx) => tx.execute(sql`select pg_sleep(3)`)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DeadlineError);
      expect(Date.now() - started).toBeLessThan(1_500);
      // The old pool (its one connection still sleeping on the server) is gone; a new one answers.
      const rows = (await db.withSystem((tx) => tx.execute(sql`select 1 as ok`))) as unknown as Array<{ ok: number }>;
      expect(rows).toEqual([{ ok: 1 }]);
    } finally {
      await db.close();
    }
  });
});
