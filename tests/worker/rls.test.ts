// Guards row-level security for real: through the application's only database helper, one person can
// never select, insert, update or delete another person's rows, in any of the seven tables.
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { beforeAll, describe, expect, inject, it } from "vitest";
import type { Tx } from "../../db/database";
import type { Person } from "../../db/repositories/auth";
import { USER_TABLES, type UserTable } from "../../db/schema";
import { newPerson, testDatabase } from "./helpers";

// The owner's view, for checking what really is in the tables (test code only; the app never does this).
const owner = postgres(inject("databaseUrl"), { max: 2, fetch_types: false, onnotice: () => {} });

interface Seeded {
  person: Person;
  /** id of this person's row in each table (users: the person id). */
  rows: Record<UserTable, string>;
  entities: [string, string];
}

/** Gives `person` one row in every table, written through the app helper as that person. */
async function seed(person: Person): Promise<Seeded> {
  return testDatabase().withUser(person.id, async (tx) => {
    const one = async (query: ReturnType<typeof sql>) => {
      const rows = (await tx.execute(query)) as unknown as Array<{ id: string }>;
      const id = rows[0]?.id;
      if (!id) throw new Error("seed insert returned no id");
      return id;
    };
    const source = await one(
      sql`insert into sources (user_id, kind, external_id) values (${person.id}, 'test', ${crypto.randomUUID()}) returning id`,
    );
    const book = await one(
      sql`insert into entities (user_id, type, name, normalized_name, source_id) values (${person.id}, 'book', 'Dune', 'dune', ${source}) returning id`,
    );
    const author = await one(
      sql`insert into entities (user_id, type, name, normalized_name, source_id) values (${person.id}, 'person', 'Frank Herbert', 'frank herbert', ${source}) returning id`,
    );
    const edge = await one(
      sql`insert into edges (user_id, from_id, to_id, type) values (${person.id}, ${book}, ${author}, 'written_by') returning id`,
    );
    const event = await one(
      sql`insert into events (user_id, kind, occurred_at, entity_ids) values (${person.id}, 'reminder', now(), array[${book}]::uuid[]) returning id`,
    );
    const fact = await one(sql`insert into facts (user_id, statement) values (${person.id}, 'Likes science fiction') returning id`);
    const connection = await one(
      sql`insert into oauth_connections (user_id, provider, account_email) values (${person.id}, 'google', ${`${person.id}@example.com`}) returning id`,
    );
    return {
      person,
      rows: { users: person.id, sources: source, entities: book, edges: edge, events: event, facts: fact, oauth_connections: connection },
      entities: [book, author],
    };
  });
}

/** The server's message: drizzle wraps driver errors as "Failed query: …" with the original as cause. */
function postgresMessage(error: unknown): string {
  if (error instanceof Error && error.cause instanceof Error) return error.cause.message;
  return error instanceof Error ? error.message : String(error);
}

/** Resolves to the server's error message of a statement expected to fail. */
async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return postgresMessage(error);
  }
  throw new Error("expected the statement to be refused");
}

/** A text column of each table, for the update attempts. */
const TEXT_COLUMN: Record<UserTable, string> = {
  users: "display_name",
  oauth_connections: "provider",
  entities: "type",
  edges: "type",
  events: "kind",
  facts: "statement",
  sources: "kind",
};

const keyColumn = (table: UserTable) => (table === "users" ? "id" : "user_id");

/** Runs `work` as `as`, returning the error message if Postgres refused it. */
async function attempt(as: Person, work: (tx: Tx) => Promise<unknown>) {
  try {
    return { result: await testDatabase().withUser(as.id, work), error: null };
  } catch (error) {
    return { result: null, error: postgresMessage(error) };
  }
}

describe("row-level security through Database.withUser", () => {
  let alice: Seeded;
  let bob: Seeded;

  beforeAll(async () => {
    alice = await seed(await newPerson("alice"));
    bob = await seed(await newPerson("bob"));
  });

  for (const table of USER_TABLES) {
    describe(table, () => {
      it("selects only the person's own rows", async () => {
        const rows = await testDatabase().withUser(alice.person.id, (tx) =>
          tx.execute(sql`select ${sql.identifier(keyColumn(table))}::text as owner from ${sql.identifier(table)}`),
        );
        const owners = new Set((rows as unknown as Array<{ owner: string }>).map((r) => r.owner));
        expect(owners).toEqual(new Set([alice.person.id]));
      });

      it("cannot read another person's row by id", async () => {
        const rows = await testDatabase().withUser(alice.person.id, (tx) =>
          tx.execute(sql`select * from ${sql.identifier(table)} where id = ${bob.rows[table]}`),
        );
        expect(rows).toHaveLength(0);
      });

      it("cannot update another person's rows", async () => {
        const column = TEXT_COLUMN[table];
        const { result } = await attempt(alice.person, (tx) =>
          tx.execute(sql`update ${sql.identifier(table)} set ${sql.identifier(column)} = 'hijacked' where id = ${bob.rows[table]}`),
        );
        expect((result as { count?: number } | null)?.count ?? 0).toBe(0);
        const [row] = await owner.unsafe(`select ${column} as value from public.${table} where id = $1`, [bob.rows[table]]);
        expect(row?.value).not.toBe("hijacked");
      });

      it("cannot delete another person's rows", async () => {
        const { result } = await attempt(alice.person, (tx) =>
          tx.execute(sql`delete from ${sql.identifier(table)} where id = ${bob.rows[table]}`),
        );
        expect((result as { count?: number } | null)?.count ?? 0).toBe(0);
        const rows = await owner.unsafe(`select 1 from public.${table} where id = $1`, [bob.rows[table]]);
        expect(rows).toHaveLength(1);
      });
    });
  }

  describe("inserting rows that belong to someone else", () => {
    const cases: Array<[string, (b: Seeded) => ReturnType<typeof sql>]> = [
      ["a source", (b) => sql`insert into sources (user_id, kind, external_id) values (${b.person.id}, 'test', 'x')`],
      ["an entity", (b) => sql`insert into entities (user_id, type, name, normalized_name) values (${b.person.id}, 'book', 'X', 'x')`],
      [
        "an edge",
        (b) => sql`insert into edges (user_id, from_id, to_id, type) values (${b.person.id}, ${b.entities[0]}, ${b.entities[1]}, 'x')`,
      ],
      ["an event", (b) => sql`insert into events (user_id, kind, occurred_at) values (${b.person.id}, 'x', now())`],
      ["a fact", (b) => sql`insert into facts (user_id, statement) values (${b.person.id}, 'x')`],
      ["an oauth connection", (b) => sql`insert into oauth_connections (user_id, provider) values (${b.person.id}, 'other')`],
    ];
    for (const [label, statement] of cases) {
      it(`refuses ${label}`, async () => {
        const { error } = await attempt(alice.person, (tx) => tx.execute(statement(bob)));
        expect(error).toMatch(/row-level security/);
      });
    }

    it("refuses an own edge pointing at another person's entity", async () => {
      const { error } = await attempt(alice.person, (tx) =>
        tx.execute(
          sql`insert into edges (user_id, from_id, to_id, type) values (${alice.person.id}, ${alice.entities[0]}, ${bob.entities[0]}, 'x')`,
        ),
      );
      expect(error).toMatch(/row-level security/);
    });

    it("refuses an own entity citing another person's source", async () => {
      const { error } = await attempt(alice.person, (tx) =>
        tx.execute(
          sql`insert into entities (user_id, type, name, normalized_name, source_id) values (${alice.person.id}, 'book', 'Y', 'y', ${bob.rows.sources})`,
        ),
      );
      expect(error).toMatch(/row-level security/);
    });

    it("refuses moving an own row to another person", async () => {
      const { error } = await attempt(alice.person, (tx) =>
        tx.execute(sql`update entities set user_id = ${bob.person.id} where id = ${alice.entities[0]}`),
      );
      expect(error).toMatch(/row-level security/);
    });
  });

  it("rejects a user id that is not a UUID before touching the database", async () => {
    await expect(testDatabase().withUser("' or 1=1 --", async () => 1)).rejects.toThrow(/UUID/);
  });

  it("the sign-in role sees no user data, the system role only granted columns", async () => {
    expect(await refusal(testDatabase().withAuth((tx) => tx.execute(sql`select * from entities`)))).toMatch(/permission denied/);
    expect(await refusal(testDatabase().withSystem((tx) => tx.execute(sql`select display_name from users`)))).toMatch(/permission denied/);
    expect(await refusal(testDatabase().withSystem((tx) => tx.execute(sql`select * from entities`)))).toMatch(/permission denied/);
    const people = (await testDatabase().withSystem((tx) =>
      tx.execute(sql`select id from users where id in (${alice.person.id}, ${bob.person.id})`),
    )) as unknown as unknown[];
    expect(people).toHaveLength(2);
  });
});

/** `statement`'s rows, run as `person` through the app helper. */
const as = (person: Person, statement: ReturnType<typeof sql>) =>
  testDatabase().withUser(person.id, async (tx) => (await tx.execute(statement)) as unknown as Array<Record<string, unknown>>);
/** A book named `name`, written as `person`: its id. */
const insertBook = async (person: Person, name: string) => {
  const [row] = await as(
    person,
    sql`insert into entities (user_id, type, name, normalized_name) values (${person.id}, 'book', ${name}, ${name.toLowerCase()}) returning id`,
  );
  return String(row?.id);
};

describe("what recall no longer reads (migration 0026)", () => {
  it("is gone: the words' table, its trigger and function, and entities' own word index", async () => {
    const [gone] = await owner`
      select to_regclass('search.entity_words') as words,
             to_regprocedure('search.entity_words_sync()') as sync,
             to_regclass('public.entities_user_search_gin') as index,
             (select count(*)::int from pg_trigger where tgname = 'entities_words') as triggers`;
    expect(gone).toEqual({ words: null, sync: null, index: null, triggers: 0 });
    // A memory is still written, renamed and matched by its words.
    const person = await newPerson("no-words");
    const id = await insertBook(person, "The Name of the Rose");
    await as(person, sql`update entities set name = 'Il nome della rosa', normalized_name = 'il nome della rosa' where id = ${id}`);
    expect(await as(person, sql`select id from search.name_matches(to_tsquery('simple', 'nome & rosa'))`)).toEqual([{ id }]);
    expect(await as(person, sql`select id from search.name_matches(to_tsquery('simple', 'name & rose'))`)).toEqual([]);
  });
});

describe("the names of a person's memories (search.entity_names, migration 0025)", () => {
  /** What the owner sees for `entity`: the row recall's words are matched against. */
  const nameOf = async (entity: string) => {
    const [row] = await owner`select user_id, status, type, recall_at, search_name, search::text as search
      from search.entity_names where entity_id = ${entity}`;
    return row;
  };
  /** The same columns as entities holds them. */
  const entityOf = async (entity: string) => {
    const [row] =
      await owner`select user_id, status, type, recall_at, search_name, search::text as search from entities where id = ${entity}`;
    return row;
  };
  const matches = (person: Person, query: string) =>
    as(person, sql`select id, search_name from search.name_matches(to_tsquery('simple', ${query})) order by search_name`);

  it("are written with the entity, follow its name, type, status and date, and go with it", async () => {
    const person = await newPerson("names");
    const id = await insertBook(person, "The Name of the Rose");
    expect(await nameOf(id)).toMatchObject({ status: "active", type: "book", search_name: "the name of the rose" });
    expect(await nameOf(id)).toEqual(await entityOf(id));
    for (const change of [
      sql`update entities set properties = '{"read": true}' where id = ${id}`,
      sql`update entities set name = 'Il nome della rosa', normalized_name = 'il nome della rosa', type = 'novel' where id = ${id}`,
      sql`update entities set status = 'archived' where id = ${id}`,
      sql`update entities set happened_at = '1980-01-01T00:00:00Z' where id = ${id}`,
    ]) {
      await as(person, change);
      expect(await nameOf(id)).toEqual(await entityOf(id));
    }
    expect(await nameOf(id)).toMatchObject({ status: "archived", type: "novel", recall_at: new Date("1980-01-01T00:00:00Z") });
    await as(person, sql`delete from entities where id = ${id}`);
    expect(await nameOf(id)).toBeUndefined();
  });

  it("are matched for the person in the setting only, and only the trigger writes them", async () => {
    const alice = await seed(await newPerson("alice-names"));
    const bob = await newPerson("bob-names");
    const [book] = alice.entities;
    expect(await matches(alice.person, "dune")).toEqual([{ id: book, search_name: "dune" }]);
    expect(await matches(bob, "dune")).toEqual([]);
    // No other role of the Worker's may ask (soma_system, which sets no person).
    const system = await testDatabase()
      .withSystem((tx) => tx.execute(sql`select * from search.name_matches(to_tsquery('simple', 'dune'))`))
      .then(
        () => "answered",
        (error: unknown) => postgresMessage(error),
      );
    expect(system).toMatch(/permission denied/);
    // The table itself is nobody's but the owner's: neither reads nor writes it directly.
    for (const statement of [
      sql`select * from search.entity_names where entity_id = ${book}`,
      sql`insert into search.entity_names (entity_id, user_id, status, type, recall_at, search_name, search)
          values (${book}, ${bob.id}, 'active', 'book', now(), 'x', 'x')`,
      sql`delete from search.entity_names where entity_id = ${book}`,
      sql`update search.entity_names set search_name = 'x' where entity_id = ${book}`,
    ]) {
      for (const person of [bob, alice.person])
        expect((await attempt(person, (tx) => tx.execute(statement))).error).toMatch(/permission denied/);
    }
    expect(await nameOf(book)).toEqual(await entityOf(book));
    const [security] =
      await owner`select relrowsecurity as enabled, relforcerowsecurity as forced from pg_class where oid = 'search.entity_names'::regclass`;
    expect(security).toEqual({ enabled: true, forced: false });
    expect(await owner`select polname from pg_policy where polrelid = 'search.entity_names'::regclass`).toEqual([]);
  });
});

describe("finding 6: the Worker's own connection (HYPERDRIVE) is a login role without rights of its own", () => {
  let alice: Seeded;
  let bob: Seeded;
  beforeAll(async () => {
    alice = await seed(await newPerson("alice"));
    bob = await seed(await newPerson("bob"));
  });

  it("connects as soma_worker, not as the owner", async () => {
    const rows = await testDatabase().withSystem((tx) => tx.execute(sql`select session_user::text as login, current_user::text as role`));
    expect(rows).toEqual([{ login: "soma_worker", role: "soma_system" }]);
  });

  it("a statement that resets the role sees nothing at all", async () => {
    const error = await refusal(
      testDatabase().withUser(alice.person.id, async (tx) => {
        await tx.execute(sql`reset role`);
        return tx.execute(sql`select name from entities where id = ${bob.entities[0]}`);
      }),
    );
    expect(error).toMatch(/permission denied for table entities/);
  });

  it("a statement cannot switch to the owner or to the superuser", async () => {
    const [ownerRole] = await owner`select tableowner from pg_tables where schemaname = 'public' and tablename = 'entities'`;
    for (const target of new Set([ownerRole?.tableowner as string, "postgres"])) {
      const error = await refusal(testDatabase().withUser(alice.person.id, (tx) => tx.execute(sql.raw(`set role "${target}"`))));
      expect(error).toMatch(/permission denied to set role/);
    }
    const visible = await testDatabase().withUser(alice.person.id, (tx) =>
      tx.execute(sql`select id from entities where user_id = ${bob.person.id}`),
    );
    expect(visible).toHaveLength(0);
  });
});

describe("the database's own guarantees", () => {
  it("has exactly the seven tables in public, each with RLS enabled and forced", async () => {
    const rows = await owner`
      select c.relname as name, c.relrowsecurity as enabled, c.relforcerowsecurity as forced
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and c.relkind in ('r', 'p') order by 1`;
    expect(rows.map((r) => r.name)).toEqual([...USER_TABLES].sort());
    for (const row of rows)
      expect({ name: row.name, enabled: row.enabled, forced: row.forced }).toEqual({ name: row.name, enabled: true, forced: true });
  });

  it("soma_app is no owner, no superuser and cannot bypass RLS", async () => {
    const [role] = await owner`select rolsuper, rolbypassrls, rolcanlogin, rolcreaterole from pg_roles where rolname = 'soma_app'`;
    expect(role).toEqual({ rolsuper: false, rolbypassrls: false, rolcanlogin: false, rolcreaterole: false });
    const owned = await owner`select tablename from pg_tables where tableowner in ('soma_app', 'soma_auth', 'soma_system')`;
    expect(owned).toHaveLength(0);
  });

  it("soma_app may read and delete the person's users row but never update it (issue 19, finding 7)", async () => {
    const [rights] = await owner`
      select has_table_privilege('soma_app', 'public.users', 'SELECT') as read,
             has_table_privilege('soma_app', 'public.users', 'DELETE') as remove,
             has_table_privilege('soma_app', 'public.users', 'UPDATE') as change`;
    expect(rights).toEqual({ read: true, remove: true, change: false });
  });

  it("finding 7: the name indexes lead with user_id, so a scan never leaves the person's rows", async () => {
    const rows = await owner`select indexname, indexdef from pg_indexes
      where (schemaname, tablename) in (('public', 'entities'), ('search', 'entity_names'))`;
    const defs = Object.fromEntries(rows.map((r) => [String(r.indexname), String(r.indexdef)]));
    expect(defs.entities_user_name_trgm).toMatch(/USING gin \(user_id, search_name gin_trgm_ops\)/); // the accent-folded key (migration 0008)
    expect(defs.entity_names_user_search_gin).toMatch(/USING gin \(user_id, search\)/); // migration 0025
    expect(Object.values(defs).filter((def) => /USING gin/.test(def) && !/USING gin \(user_id,/.test(def))).toEqual([]);
  });

  it("has the vector, pg_trgm and uuid-ossp extensions", async () => {
    const rows = await owner`select extname from pg_extension where extname in ('vector', 'pg_trgm', 'uuid-ossp') order by 1`;
    expect(rows.map((r) => r.extname)).toEqual(["pg_trgm", "uuid-ossp", "vector"]);
  });

  it("has the recall indexes", async () => {
    const rows = await owner`select indexname, indexdef from pg_indexes where schemaname = 'public'`;
    const defs = Object.fromEntries(rows.map((r) => [String(r.indexname), String(r.indexdef)]));
    expect(defs.entities_embedding_hnsw).toMatch(/USING hnsw \(embedding vector_cosine_ops\)/);
    expect(defs.facts_embedding_hnsw).toMatch(/USING hnsw \(embedding vector_cosine_ops\)/);
    expect(defs.entities_name_trgm).toBeUndefined();
    expect(defs.entities_search_gin).toBeUndefined();
    expect(defs.entities_user_type_idx).toMatch(/\(user_id, type, updated_at\)/);
    expect(defs.entities_user_status_idx).toBeUndefined();
    expect(defs.entities_user_status_recall_at_idx).toMatch(/\(user_id, status, recall_at\)/);
  });

  it("mirrors auth.users into public.users", async () => {
    const person = await newPerson("mirror");
    const [row] = await owner`select display_name from public.users where id = ${person.id}`;
    expect(row?.display_name).toBe(person.displayName);
    await owner`update auth.users set display_name = 'renamed' where id = ${person.id}`;
    const [renamed] = await owner`select display_name from public.users where id = ${person.id}`;
    expect(renamed?.display_name).toBe("renamed");
  });
});
