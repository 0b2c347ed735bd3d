// Guards the names of memories (search.entity_names, migration 0025) where they matter: a managed
// database, whose setup role owns the database but is no superuser, so row-level security holds it on
// entities (FORCEd) but not on the names it owns (a superuser, as on the embedded Postgres, passes
// every policy anyway), and full-text matching cannot be marked LEAKPROOF: recall matches a question's
// words only through search.name_matches, which runs as that owner and answers for one person.
// On a real PostgreSQL with pgvector (skipped where there is none: the README's bench section builds it).
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../../db/database";
import { createPerson, type Person } from "../../db/repositories/auth";
import { recall, recallSql, SCOPE_ROWS } from "../../db/repositories/recall";
import { setupDatabase, workerDatabaseUrl } from "../../ops/db-setup";
import { nameScans } from "./helpers";
import { type RealPostgres, realPgvectorInstalled, startRealPostgres } from "./real-postgres";

describe.skipIf(!realPgvectorInstalled)("the names of memories on a managed database (setup role without superuser)", () => {
  let server: RealPostgres;
  let db: Database;
  let alice: Person;
  let bob: Person;
  let ownerSql: postgres.Sql;

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
    ownerSql = postgres(url("soma_owner", "owner-password"), { max: 1, onnotice: () => {} });
    alice = await createPerson(db, { displayName: "alice" });
    bob = await createPerson(db, { displayName: "bob" });
  }, 180_000);
  afterAll(async () => {
    await db?.close();
    await ownerSql?.end();
    server?.stop();
  });

  /** The search names the owner holds for `person`'s memories (the runtime role may not read them). */
  const searchNames = async (person: Person) =>
    (await ownerSql`select search_name from search.entity_names where user_id = ${person.id} order by search_name`).map((r) =>
      String(r.search_name),
    );
  const names = async (person: Person, query: string) =>
    (await recall(db, person.id, { query, limit: 5, embedding: null })).map((r) =>
      r.kind === "entity" ? r.entity.name : r.fact.statement,
    );
  it("are written by the trigger as their owner, for each person's own memories only, and read by no other role", async () => {
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
    expect(await searchNames(alice)).toEqual(["il nome della rosa"]);
    expect(await searchNames(bob)).toEqual(["rose garden"]);
    await expect(db.withUser(alice.id, (tx) => tx.execute(sql`select * from search.entity_names`))).rejects.toMatchObject({
      cause: { message: expect.stringMatching(/permission denied/) },
    });
    // Alice holds more than recall's SCOPE_ROWS, so her questions' scope is large (each note: "errand", its number, "note").
    await db.withUser(alice.id, (tx) =>
      tx.execute(sql`insert into entities (user_id, type, name, normalized_name)
        select ${alice.id}, 'note', 'Errand ' || n, 'errand ' || n from generate_series(1, ${SCOPE_ROWS}) n`),
    );
    expect(await searchNames(alice)).toHaveLength(1 + SCOPE_ROWS);
    await ownerSql`vacuum (analyze) search.entity_names`;
  }, 120_000);

  it("find a large scope's memories by their GIN index without LEAKPROOF matching, never another person's", async () => {
    const [leakproof] = (await db.withUser(alice.id, (tx) =>
      tx.execute(sql`select proleakproof as marked from pg_proc where oid = 'ts_match_vq(tsvector, tsquery)'::regprocedure`),
    )) as unknown as Array<{ marked: boolean }>;
    expect(leakproof?.marked).toBe(false);
    expect(await names(alice, "rosa")).toEqual(["Il nome della rosa"]);
    expect(await names(alice, "nom")).toEqual(["Il nome della rosa"]);
    expect(await names(alice, "rose gard")).toEqual([]);
    expect(await nameScans(db, alice.id, recallSql(alice.id, { query: "nome rosa", limit: 5, embedding: null }))).toEqual({
      gin: 1,
      table: 0,
    });
    expect(await names(bob, "rosa")).toEqual([]);
    expect(await names(bob, "rose gard")).toEqual(["Rose Garden"]);
  });

  it("go with their memory", async () => {
    await db.withUser(alice.id, (tx) => tx.execute(sql`delete from entities where user_id = ${alice.id}`));
    expect(await searchNames(alice)).toEqual([]);
    expect(await names(alice, "errand")).toEqual([]);
    expect(await searchNames(bob)).toEqual(["rose garden"]);
  });
});
