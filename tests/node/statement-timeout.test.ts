// Guards the server-side statement deadline: every transaction of a Database sets statement_timeout
// (transaction-locally), so a runaway statement is cancelled by Postgres itself with SQLSTATE 57014.
// The embedded test Postgres (PGlite, WASM) keeps the setting but has no timer signals to enforce it,
// so this runs against a real PostgreSQL when one is installed (tests/node/real-postgres.ts), and is
// skipped otherwise.
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../../db/database";
import { DeadlineError } from "../../platform/deadline";
import { realPostgresInstalled, startRealPostgres, type RealPostgres } from "./real-postgres";

describe.skipIf(!realPostgresInstalled)("statement_timeout on a real PostgreSQL", () => {
  let server: RealPostgres | undefined;
  let url = "";

  beforeAll(async () => {
    server = await startRealPostgres();
    url = server.url;
    const owner = postgres(url, { max: 1, onnotice: () => {} });
    await owner`create role soma_system`;
    await owner.end();
  }, 60_000);

  afterAll(() => server?.stop());

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
      const rows = (await new Database(url, { max: 1 }).withSystem((tx) =>
        tx.execute(sql`select current_setting('statement_timeout') as timeout`),
      )) as unknown as Array<{ timeout: string }>;
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
      // The old pool (its one connection still sleeping on the server) is gone; a new one answers. Its
      // first connection may itself take longer than the 300 ms deadline on a busy machine (a new server
      // process, authentication), so recovery means: the same Database answers again within seconds.
      const recoveredBy = Date.now() + 5_000;
      let rows: unknown;
      while (rows === undefined) {
        rows = await db
          .withSystem((tx) => tx.execute(sql`select 1 as ok`))
          .catch((e: unknown) => {
            if (!(e instanceof DeadlineError) || Date.now() > recoveredBy) throw e;
            return undefined;
          });
      }
      expect(rows).toEqual([{ ok: 1 }]);
    } finally {
      await db.close();
    }
  });
});
