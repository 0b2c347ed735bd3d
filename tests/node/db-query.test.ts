// Guards `npm run db:query`: a newcomer looks at what Soma stored (the spec's "an entities row with type
// book exists") without a Postgres client, against the embedded Postgres `npm start` runs in another
// process — read only, long values cut, and a clear word when nothing is running.
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { startEmbeddedPostgres } from "../../ops/embedded-postgres";
import { runCommand } from "./service-process";

const dbQuery = (stateDir: string, ...args: string[]) => runCommand(["ops/db-query.ts", ...args], { SOMA_STATE_DIR: stateDir });

describe("npm run db:query", () => {
  it("prints a statement's rows from the running embedded Postgres, read only; says so when none runs", async () => {
    const stateDir = mkdtempSync(`${tmpdir()}/soma-db-query-`);
    const database = await startEmbeddedPostgres({ dataDir: `${stateDir}/pgdata` });
    try {
      const owner = postgres(database.url, { max: 1, onnotice: () => {} });
      await owner.unsafe(`create table entities (type text, name text, embedding text);
        insert into entities values ('book', 'Dune', repeat('0.125,', 1024)), ('place', 'Lisbon', null)`);
      await owner.end();

      const read = await dbQuery(stateDir, "select type, name, embedding from entities order by name");
      expect(read.code).toBe(0);
      expect(read.stdout.trimEnd().split("\n")).toEqual([
        "type  | name   | embedding",
        "------+--------+--------------------------------------------------------------------------",
        "book  | Dune   | 0.125,0.125,0.125,0.125,0.125,0.125,0.125,0.125,0.125,0.125… (6144 chars)",
        "place | Lisbon |",
        "(2 rows)",
      ]);

      const write = await dbQuery(stateDir, "delete from entities");
      expect(write.code).toBe(1);
      expect(write.stderr).toContain("cannot execute DELETE in a read-only transaction");
      // Ending the read-only transaction first does not open a way to write: one statement only.
      const around = await dbQuery(stateDir, "commit; create table written (x int)");
      expect(around.code).toBe(1);
      expect(around.stderr).toContain("cannot insert multiple commands into a prepared statement");
      const alone = await dbQuery(stateDir, "commit");
      expect(alone.code).toBe(0);
      const check = postgres(database.url, { max: 1, onnotice: () => {} });
      expect(await check`select to_regclass('written') as t`).toEqual([{ t: null }]);
      expect((await check`select count(*)::int as n from entities`)[0]!.n).toBe(2);
      await check.end();
    } finally {
      await database.stop();
    }
    expect(existsSync(`${stateDir}/pgdata.port`)).toBe(false);
    const none = await dbQuery(stateDir, "select 1");
    expect([none.code, none.stderr.trim()]).toEqual([
      2,
      "no database: Soma's embedded Postgres is not running (npm start), and DATABASE_URL is not set",
    ]);
    const usage = await dbQuery(stateDir);
    expect([usage.code, usage.stderr.trim()]).toEqual([2, 'usage: npm run db:query -- "select type, name from entities"']);
  });
});
