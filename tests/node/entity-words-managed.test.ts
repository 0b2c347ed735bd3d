// Guards the words of memories (search.entity_words, migration 0023) where they matter: a managed
// database, whose setup role owns the database but is no superuser, so row-level security holds the
// trigger that writes them too (a superuser, as on the embedded Postgres, passes every policy) and
// full-text matching cannot be marked LEAKPROOF, so recall finds a large scope's words through them.
// On a real PostgreSQL with pgvector (skipped where there is none: the README's bench section builds it).
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../../db/database";
import { createPerson, type Person } from "../../db/repositories/auth";
import { recall, recallSql, SCOPE_ROWS } from "../../db/repositories/recall";
import { setupDatabase, workerDatabaseUrl } from "../../ops/db-setup";
import { type RealPostgres, realPgvectorInstalled, startRealPostgres } from "./real-postgres";

describe.skipIf(!realPgvectorInstalled)("the words of memories on a managed database (setup role without superuser)", () => {
  let server: RealPostgres;
  let db: Database;
  let alice: Person;
  let bob: Person;

  beforeAll(async () => {
    server = await startRealPostgres();
    const admin = postgres(server.url, { max: 1, onnotice: () => {} });
    await admin`create role soma_owner login createrole password 'owner-password'`;
    await admin`create database soma owner soma_owner`;
    await admin.end();
    // The provider installs the extensions a managed database offers; the owner's setup finds them there.
    const url = (role: string, password: string) => server.as(role, password).replace(/\/postgres$/, "/soma");
    const provider = postgres(url("postgres", "bootstrap-superuser-password"), { max: 1, onnotice: () => {} });
    await provider.unsafe(`create extension vector; create extension pg_trgm; create extension "uuid-ossp"; create extension btree_gin`);
    await provider.end();
    const worker = { role: "soma_worker", password: "managed-worker-password" };
    await setupDatabase(url("soma_owner", "owner-password"), () => {}, { worker });
    db = new Database(workerDatabaseUrl(url("soma_owner", "owner-password"), worker), { max: 2 });
    alice = await createPerson(db, { displayName: "alice" });
    bob = await createPerson(db, { displayName: "bob" });
  }, 180_000);
  afterAll(async () => {
    await db?.close();
    server?.stop();
  });

  const words = async (person: Person) =>
    (
      (await db.withUser(person.id, (tx) => tx.execute(sql`select word from search.entity_words order by word`))) as unknown as Array<{
        word: string;
      }>
    ).map((row) => row.word);
  const names = async (person: Person, query: string) =>
    (await recall(db, person.id, { query, limit: 5, embedding: null })).map((r) =>
      r.kind === "entity" ? r.entity.name : r.fact.statement,
    );
  /** The index scans that ran for `query` as `person` asks it (recall's entity statement). */
  const scansRun = async (person: Person, query: string) => {
    const lines = (await db.withUser(person.id, (tx) =>
      tx.execute(sql`explain (analyze, costs off) ${recallSql(person.id, { query, limit: 5, embedding: null })}`),
    )) as unknown as Array<{ "QUERY PLAN": string }>;
    return lines.map((l) => l["QUERY PLAN"]).filter((l) => /Index (Only )?Scan/.test(l) && !l.includes("never executed"));
  };

  it("are written by the trigger under the policies, for each person's own memories only", async () => {
    for (const [person, name] of [
      [alice, "The Name of the Rose"],
      [bob, "Rose Garden"],
    ] as const) {
      await db.withUser(person.id, (tx) =>
        tx.execute(
          sql`insert into entities (user_id, type, name, normalized_name) values (${person.id}, 'book', ${name}, ${name.toLowerCase()})`,
        ),
      );
    }
    await db.withUser(alice.id, (tx) =>
      tx.execute(sql`update entities set name = 'Il nome della rosa', normalized_name = 'il nome della rosa' where user_id = ${alice.id}`),
    );
    expect(await words(alice)).toEqual(["book", "della", "il", "nome", "rosa"]);
    expect(await words(bob)).toEqual(["book", "garden", "rose"]);
    // Alice holds more than recall's SCOPE_ROWS, so her questions' scope is large (each note: "errand", its number, "note").
    await db.withUser(alice.id, (tx) =>
      tx.execute(sql`insert into entities (user_id, type, name, normalized_name)
        select ${alice.id}, 'note', 'Errand ' || n, 'errand ' || n from generate_series(1, ${SCOPE_ROWS}) n`),
    );
    expect(await words(alice)).toHaveLength(5 + 3 * SCOPE_ROWS);
  }, 120_000);

  it("find a large scope's memories without LEAKPROOF matching, never another person's", async () => {
    const [leakproof] = (await db.withUser(alice.id, (tx) =>
      tx.execute(sql`select proleakproof as marked from pg_proc where oid = 'ts_match_vq(tsvector, tsquery)'::regprocedure`),
    )) as unknown as Array<{ marked: boolean }>;
    expect(leakproof?.marked).toBe(false);
    expect(await names(alice, "rosa")).toEqual(["Il nome della rosa"]);
    expect(await names(alice, "nom")).toEqual(["Il nome della rosa"]);
    expect(await names(alice, "rose gard")).toEqual([]);
    expect(await scansRun(alice, "nome rosa")).toContainEqual(expect.stringContaining("entity_words_user_word_idx"));
    expect(await names(bob, "rosa")).toEqual([]);
    expect(await names(bob, "rose gard")).toEqual(["Rose Garden"]);
  });

  it("go with their memory", async () => {
    await db.withUser(alice.id, (tx) => tx.execute(sql`delete from entities where user_id = ${alice.id}`));
    expect(await words(alice)).toEqual([]);
    expect(await names(alice, "errand")).toEqual([]);
    expect(await words(bob)).toEqual(["book", "garden", "rose"]);
  });
});
