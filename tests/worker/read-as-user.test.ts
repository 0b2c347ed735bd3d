// Guards Database.readAsUser, recall's one-round-trip read: the person's settings and the statements go
// as one simple-protocol query with their values written in as literals. Row-level security holds as in
// withUser, the settings end with the query (nothing is left on the connection for its next borrower,
// even after an error), and no value — quotes, backslashes, a statement of its own, NUL — is ever read
// as anything but the value it was. Through workerd's sockets to the embedded Postgres, as the app runs.
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { inline } from "../../db/database";
import { workerdDatabase } from "../../db/workerd-socket";
import { newPerson, testDatabase } from "./helpers";

/** A Database of one connection: whatever a read leaves on it, the next call sees. */
const oneConnection = () => workerdDatabase(env.HYPERDRIVE.connectionString, { max: 1 });

async function addNote(userId: string, name: string) {
  await testDatabase().withUser(userId, (tx) =>
    tx.execute(sql`insert into entities (user_id, type, name, normalized_name) values (${userId}, 'note', ${name}, ${name})`),
  );
}

describe("Database.readAsUser", () => {
  it("reads as the person, under row-level security, and the settings end with the read", async () => {
    const [ana, ben] = await Promise.all([newPerson("ana"), newPerson("ben")]);
    await addNote(ana.id, "ana's note");
    await addNote(ben.id, "ben's note");
    const db = oneConnection();
    try {
      // Even naming the other person's id, only the reader's rows are there.
      const rows = await db.readAsUser<{ name: string }>(ana.id, [sql`select name from entities where user_id in (${ana.id}, ${ben.id})`]);
      expect(rows).toEqual([{ name: "ana's note" }]);
      const [inside] = await db.readAsUser<{ who: string; role: string; timeout: string }>(ana.id, [
        sql`select current_setting('app.user_id') as who, current_user as role, current_setting('statement_timeout') as timeout`,
      ]);
      expect(inside).toEqual({ who: ana.id, role: "soma_app", timeout: "10s" });
      // Several statements: the rows of the last, the earlier ones' settings in force for it.
      const last = await db.readAsUser<{ sort: string }>(ana.id, [
        sql`select set_config('enable_sort', 'off', true)`,
        sql`select current_setting('enable_sort') as sort`,
      ]);
      expect(last).toEqual([{ sort: "off" }]);
      // The same connection afterwards: no person, no role, no setting left behind.
      const after = await db.withSystem(
        async (tx) =>
          (await tx.execute(
            sql`select current_setting('app.user_id', true) as who, current_setting('enable_sort') as sort`,
          )) as unknown as Array<{
            who: string;
            sort: string;
          }>,
      );
      expect(after).toEqual([{ who: "", sort: "on" }]);
      await expect(db.readAsUser("not-a-uuid", [sql`select 1`])).rejects.toThrow("UUID");
    } finally {
      await db.close();
    }
  });

  it("writes every value in as the literal it is: quotes, backslashes, statements, NUL and numbers never change what is read", async () => {
    const person = await newPerson("values");
    const db = oneConnection();
    try {
      const strings = [
        "it's",
        String.raw`back\slash`,
        String.raw`\'; select pg_sleep(5); --`,
        "'); delete from entities; --",
        "E'x' $1 $$ \u00001\u0000",
        "Достоевский — 🎉",
        "",
      ];
      for (const value of strings) {
        const [row] = await db.readAsUser<{ v: string }>(person.id, [sql`select ${value}::text as v`]);
        // NUL cannot be held by Postgres text: it is left out; everything else comes back as it went.
        expect(row?.v).toBe(value.replaceAll("\u0000", ""));
      }
      const [numbers] = await db.readAsUser<{ a: number; b: string; c: boolean; d: null }>(person.id, [
        sql`select 10 -${-5}::int as a, ${0.3}::text as b, ${true} as c, ${null}::text as d`,
      ]);
      // "10 --5" would have been a comment: the negative number stays a number.
      expect(numbers).toEqual({ a: 15, b: "0.3", c: true, d: null });
      // What cannot be written as a literal faithfully is refused, never guessed.
      expect(() => inline(sql`select ${new Date()}`)).toThrow(TypeError);
      expect(() => inline(sql`select ${Number.NaN}`)).toThrow(TypeError);
    } finally {
      await db.close();
    }
  });

  it("a failing read rejects and leaves the connection clean for the next", async () => {
    const person = await newPerson("failing");
    const db = oneConnection();
    try {
      await expect(db.readAsUser(person.id, [sql`select set_config('enable_sort', 'off', true)`, sql`select 1 / 0`])).rejects.toThrow(
        "division by zero",
      );
      const [row] = await db.readAsUser<{ sort: string; who: string }>(person.id, [
        sql`select current_setting('enable_sort') as sort, current_setting('app.user_id') as who`,
      ]);
      expect(row).toEqual({ sort: "on", who: person.id });
    } finally {
      await db.close();
    }
  });
});
