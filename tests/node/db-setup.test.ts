// Guards `npm run db:setup`: the spec's fixed order on an empty database, idempotence (a second run
// leaves the catalog exactly as the first did), re-runs with DATABASE_URL alone that keep the Worker's
// password (only the run that creates its login role needs DATABASE_WORKER_PASSWORD), the login role
// that holds no rights of its own, and planner tuning that applies statement by statement — on the
// embedded Postgres and, where installed, a real PostgreSQL without a superuser in the setup role.
import { spawn } from "node:child_process";
import { sql as sqlTag } from "drizzle-orm";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../../db/database";
import { createPerson } from "../../db/repositories/auth";
import { applySqlScript, DEFAULT_WORKER_ROLE, setupDatabase, workerDatabaseUrl } from "../../ops/db-setup";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../../ops/embedded-postgres";
import { realPostgresInstalled, startRealPostgres, type RealPostgres } from "./real-postgres";

let database: EmbeddedPostgres;
let sql: postgres.Sql;

beforeAll(async () => {
  database = await startEmbeddedPostgres();
  sql = postgres(database.url, { max: 1, onnotice: () => {} });
});
afterAll(async () => {
  await sql.end({ timeout: 1 });
  await database.stop();
});

/** Everything setup creates, as text: tables, columns, indexes, policies, triggers, roles, grants, functions. */
async function catalog() {
  const [tables, columns, indexes, policies, triggers, roles, grants, functions, migrations] = await Promise.all([
    sql`select schemaname, tablename, rowsecurity from pg_tables where schemaname in ('public', 'auth') order by 1, 2`,
    sql`select table_schema, table_name, column_name, data_type, column_default, is_nullable from information_schema.columns where table_schema in ('public', 'auth') order by 1, 2, 3`,
    sql`select schemaname, indexname, indexdef from pg_indexes where schemaname in ('public', 'auth') order by 1, 2`,
    sql`select tablename, policyname, cmd, roles::text, qual, with_check from pg_policies order by 1, 2`,
    sql`select event_object_table, trigger_name, action_timing, event_manipulation, action_statement from information_schema.triggers order by 1, 2, 4`,
    sql`select rolname, rolsuper, rolbypassrls, rolcanlogin from pg_roles where rolname like 'soma_%' order by 1`,
    sql`select grantee, table_schema, table_name, privilege_type from information_schema.role_table_grants where grantee like 'soma_%' order by 1, 2, 3, 4`,
    sql`select p.proname, pg_get_functiondef(p.oid) as def from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'auth' order by 1`,
    sql`select hash from drizzle.__drizzle_migrations order by id`,
  ]);
  return { tables, columns, indexes, policies, triggers, roles, grants, functions, migrations };
}

const WORKER = { role: DEFAULT_WORKER_ROLE, password: "worker-password-for-tests" };

describe("db:setup", () => {
  it("applies the extensions first, then migrations, then the remaining scripts in order", async () => {
    const steps: string[] = [];
    await setupDatabase(database.url, (line) => steps.push(line), { worker: WORKER });
    expect(steps).toEqual([
      "applied 0001_extensions.sql",
      "applied drizzle migrations",
      "vacuumed and analyzed the memory tables",
      "applied 0100_roles.sql",
      "applied 0200_rls.sql",
      "applied 0300_triggers.sql",
      "applied 0400_planner.sql",
    ]);
    const publicTables = await sql`select tablename from pg_tables where schemaname = 'public'`;
    expect(publicTables).toHaveLength(7);
  });

  it("is idempotent: a second run (without the Worker's password) changes nothing", async () => {
    const before = await catalog();
    expect(before.policies.length).toBeGreaterThanOrEqual(28);
    await setupDatabase(database.url);
    expect(await catalog()).toEqual(before);
  });

  it("survives two runs at once (advisory lock)", async () => {
    const before = await catalog();
    await Promise.all([setupDatabase(database.url), setupDatabase(database.url)]);
    expect(await catalog()).toEqual(before);
  });
});

/** `npm run db:setup` itself, with only `env` (and PATH, HOME) in its environment. */
function dbSetup(env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // Asynchronous: the embedded Postgres answering it runs in this process.
    const child = spawn("npm", ["run", "--silent", "db:setup"], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

describe("npm run db:setup on a fresh database: the password the first time, DATABASE_URL alone after", () => {
  let fresh: EmbeddedPostgres;
  let owner: postgres.Sql;
  const FIRST = "first-worker-password";
  /** Logs in as the Worker's login role with `password`: its user, or the server's refusal. */
  const logIn = async (password: string) => {
    const login = postgres(workerDatabaseUrl(fresh.url, { role: DEFAULT_WORKER_ROLE, password }), { max: 1, onnotice: () => {} });
    try {
      const [row] = await login`select current_user as user`;
      return String(row?.user);
    } catch (error) {
      return `refused: ${(error as Error).message}`;
    } finally {
      await login.end({ timeout: 1 });
    }
  };
  beforeAll(async () => {
    fresh = await startEmbeddedPostgres();
    owner = postgres(fresh.url, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await owner?.end({ timeout: 1 });
    await fresh?.stop();
  });

  it("the first run, which creates the login role, refuses to go on without its password and applies nothing", async () => {
    const run = await dbSetup({ DATABASE_URL: fresh.url });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(
      `db:setup: the Worker's login role ${DEFAULT_WORKER_ROLE} does not exist yet, and the run that creates it needs its password: set DATABASE_WORKER_PASSWORD`,
    );
    expect(run.stdout).not.toContain("applied");
    expect(await owner`select rolname from pg_roles where rolname = ${DEFAULT_WORKER_ROLE}`).toEqual([]);
    expect(await owner`select tablename from pg_tables where schemaname in ('public', 'auth', 'drizzle')`).toEqual([]);
    // A role of another name says so too.
    const named = await dbSetup({ DATABASE_URL: fresh.url, DATABASE_WORKER_ROLE: "soma_worker_eu" });
    expect([named.status, named.stderr]).toEqual([2, expect.stringContaining("login role soma_worker_eu does not exist yet")]);
  }, 60_000);

  it("runs with the password, then again with DATABASE_URL alone, and the role still logs in with the first password", async () => {
    const first = await dbSetup({ DATABASE_URL: fresh.url, DATABASE_WORKER_PASSWORD: FIRST });
    expect([first.status, first.stderr]).toEqual([0, ""]);
    expect(first.stdout).toContain("db:setup: applied 0100_roles.sql");
    expect(first.stdout).not.toContain(FIRST);
    expect(await logIn(FIRST)).toBe(DEFAULT_WORKER_ROLE);

    const again = await dbSetup({ DATABASE_URL: fresh.url });
    expect([again.status, again.stderr]).toEqual([0, ""]);
    expect(again.stdout).toContain("db:setup: applied 0100_roles.sql");
    expect(again.stdout).toContain("password left unchanged");
    expect(again.stdout.trim().split("\n").at(-1)).toBe("db:setup: done");
    expect(await logIn(FIRST)).toBe(DEFAULT_WORKER_ROLE);
    expect(await logIn("not-the-password")).toMatch(/refused: .*password authentication failed/);
  }, 120_000);

  it("a password given again replaces the old one (rotation)", async () => {
    const rotated = await dbSetup({ DATABASE_URL: fresh.url, DATABASE_WORKER_PASSWORD: "second-worker-password" });
    expect([rotated.status, rotated.stderr]).toEqual([0, ""]);
    expect(await logIn("second-worker-password")).toBe(DEFAULT_WORKER_ROLE);
    expect(await logIn(FIRST)).toMatch(/refused: .*password authentication failed/);
  }, 120_000);
});

/** One server under test: the owner's URL, the Worker's, and how to make a person there. */
interface Backend {
  owner: postgres.Sql;
  ownerRole: string;
  workerUrl: string;
  newPerson(): Promise<string>;
  /** PGlite's one session is its superuser's: SET SESSION AUTHORIZATION is only refused on a real server. */
  real: boolean;
}

/** The message of a statement expected to fail (drizzle wraps the driver's error as its cause). */
async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!error) throw new Error("expected the statement to be refused");
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error ? cause.message : (error as Error).message;
}

function loginRoleCases(name: string, open: () => Promise<Backend>, close: () => Promise<void> | void, skip = false) {
  describe.skipIf(skip)(name, () => {
    let backend: Backend;
    let worker: Database;
    let alice = "";
    let bob = "";
    beforeAll(async () => {
      backend = await open();
      worker = new Database(backend.workerUrl, { max: 2 });
      [alice, bob] = [await backend.newPerson(), await backend.newPerson()];
      for (const [person, title] of [
        [alice, "Dune"],
        [bob, "Bob's diary"],
      ] as const) {
        await worker.withUser(person, (tx) =>
          tx.execute(
            sqlTag`insert into entities (user_id, type, name, normalized_name) values (${person}, 'book', ${title}, ${title.toLowerCase()})`,
          ),
        );
      }
    }, 120_000);
    afterAll(async () => {
      await worker?.close();
      await close();
    });

    it("is a login role with no superuser, BYPASSRLS, CREATEROLE or CREATEDB, inheriting nothing, owning nothing", async () => {
      const [role] =
        await backend.owner`select rolcanlogin, rolsuper, rolbypassrls, rolcreaterole, rolcreatedb, rolinherit, rolreplication from pg_roles where rolname = ${WORKER.role}`;
      expect(role).toEqual({
        rolcanlogin: true,
        rolsuper: false,
        rolbypassrls: false,
        rolcreaterole: false,
        rolcreatedb: false,
        rolinherit: false,
        rolreplication: false,
      });
      const groups =
        await backend.owner`select g.rolname from pg_auth_members m join pg_roles g on g.oid = m.roleid join pg_roles r on r.oid = m.member where r.rolname = ${WORKER.role} order by 1`;
      expect(groups.map((g) => g.rolname)).toEqual(["soma_app", "soma_auth", "soma_system"]);
      const [owned] =
        await backend.owner`select (select count(*) from pg_class c join pg_roles r on r.oid = c.relowner where r.rolname = ${WORKER.role})
        + (select count(*) from pg_proc p join pg_roles r on r.oid = p.proowner where r.rolname = ${WORKER.role})
        + (select count(*) from pg_namespace n join pg_roles r on r.oid = n.nspowner where r.rolname = ${WORKER.role}) as n`;
      expect(Number(owned?.n)).toBe(0);
    });

    it("reads only its person's rows, even when a statement resets or switches the role", async () => {
      const own = (await worker.withUser(alice, (tx) =>
        tx.execute(sqlTag`select user_id::text as owner from entities`),
      )) as unknown as Array<{ owner: string }>;
      expect(new Set(own.map((r) => r.owner))).toEqual(new Set([alice]));
      expect(
        await refusal(
          worker.withUser(alice, async (tx) => {
            await tx.execute(sqlTag`reset role`);
            return tx.execute(sqlTag`select name from entities where user_id = ${bob}`);
          }),
        ),
      ).toMatch(/permission denied for table entities/);
      for (const target of new Set([backend.ownerRole, "postgres"])) {
        expect(await refusal(worker.withUser(alice, (tx) => tx.execute(sqlTag.raw(`set role ${target}`))))).toMatch(
          /permission denied to set role/,
        );
        expect(
          await refusal(worker.withUser(alice, (tx) => tx.execute(sqlTag.raw(`select set_config('role', '${target}', true)`)))),
        ).toMatch(/permission denied to set role/);
      }
      expect(
        await refusal(
          worker.withUser(alice, async (tx) => {
            await tx.execute(sqlTag`set role soma_system`);
            return tx.execute(sqlTag`select name from entities`);
          }),
        ),
      ).toMatch(/permission denied for table entities/);
    });

    it("on a connection of its own it sees nothing, cannot bypass RLS and cannot alter tables or policies", async () => {
      const login = postgres(backend.workerUrl, { max: 1, onnotice: () => {} });
      try {
        expect(await login`select current_user, session_user`).toEqual([{ current_user: WORKER.role, session_user: WORKER.role }]);
        expect(await refusal(login`select name from entities`)).toMatch(/permission denied/);
        expect(await refusal(login`alter role ${login(WORKER.role)} bypassrls`)).toMatch(/permission denied|must be superuser/);
        expect(await refusal(login`create table public.escape (x int)`)).toMatch(/permission denied for schema public/);
        const asApp = async (statement: string) =>
          login.begin(async (tx) => {
            await tx`set local role soma_app`;
            return tx.unsafe(statement);
          });
        expect(await asApp("select name from entities")).toEqual([]); // no person set: RLS shows nothing
        expect(await refusal(asApp("set local row_security = off; select name from entities"))).toMatch(/row-level security/);
        expect(await refusal(asApp("alter table entities disable row level security"))).toMatch(/must be owner/);
        expect(await refusal(asApp("alter table entities no force row level security"))).toMatch(/must be owner/);
        expect(await refusal(asApp("drop policy entities_select on entities"))).toMatch(/must be owner/);
        expect(await refusal(asApp("create policy everything on entities using (true)"))).toMatch(/must be owner/);
        if (backend.real) expect(await refusal(login`set session authorization postgres`)).toMatch(/permission denied/);
      } finally {
        await login.end({ timeout: 1 });
      }
      const wrong = postgres(workerDatabaseUrl(backend.workerUrl, { ...WORKER, password: "not-the-password" }), {
        max: 1,
        onnotice: () => {},
      });
      expect(await refusal(wrong`select 1`)).toMatch(/password authentication failed/);
      await wrong.end({ timeout: 1 });
    });
  });
}

describe("finding 6: the Worker connects as a login role that holds nothing of its own", () => {
  loginRoleCases(
    "embedded Postgres (PGlite)",
    async () => {
      await setupDatabase(database.url, () => {}, { worker: WORKER });
      const app = new Database(database.url, { max: 1 });
      return {
        owner: sql,
        ownerRole: "postgres",
        workerUrl: workerDatabaseUrl(database.url, WORKER),
        newPerson: async () => (await createPerson(app, { displayName: `person-${crypto.randomUUID().slice(0, 8)}` })).id,
        real: false,
      };
    },
    () => {},
  );

  // A managed-database setup: the setup role owns the database and may create roles, but is no superuser.
  let server: RealPostgres | undefined;
  let owner: postgres.Sql | undefined;
  loginRoleCases(
    "PostgreSQL 15, setup role without superuser",
    async () => {
      server = await startRealPostgres();
      const admin = postgres(server.url, { max: 1, onnotice: () => {} });
      await admin`create role soma_owner login createrole password 'owner-password'`;
      await admin`alter database postgres owner to soma_owner`;
      await admin.end();
      owner = postgres(server.as("soma_owner", "owner-password"), { max: 1, onnotice: () => {} });
      await owner.unsafe(STAND_IN_SCHEMA).simple();
      for (const script of ["0100_roles.sql", "0200_rls.sql"]) await applySqlScript(owner, script, { worker: WORKER });
      // A second run without the password changes nothing and does not fail: the cases below log in with WORKER.password.
      await applySqlScript(owner, "0100_roles.sql");
      return {
        owner,
        ownerRole: "soma_owner",
        workerUrl: server.as(WORKER.role, WORKER.password),
        newPerson: async () => crypto.randomUUID(),
        real: true,
      };
    },
    async () => {
      await owner?.end({ timeout: 1 });
      server?.stop();
    },
    !realPostgresInstalled,
  );
});

describe("finding 7: planner tuning applies statement by statement", () => {
  const tuning = (owner: postgres.Sql) => owner`
    select p.proname as name, p.procost::int as cost, p.proleakproof as leakproof from pg_proc p
    where (p.proname, pg_get_function_identity_arguments(p.oid)) in
      (('cosine_distance', 'vector, vector'), ('similarity', 'text, text'), ('similarity_op', 'text, text'), ('ts_match_vq', 'tsvector, tsquery'),
       ('word_similarity_op', 'text, text'))
    order by 1`;

  it("with a superuser (the embedded Postgres) every statement applies", async () => {
    expect(await tuning(sql)).toEqual([
      { name: "cosine_distance", cost: 500, leakproof: false },
      { name: "similarity", cost: 200, leakproof: false },
      { name: "similarity_op", cost: 200, leakproof: true },
      { name: "ts_match_vq", cost: 1, leakproof: true },
      { name: "word_similarity_op", cost: 200, leakproof: true },
    ]);
  });

  it.skipIf(!realPostgresInstalled)(
    "without one (PostgreSQL 15) the costs still apply and LEAKPROOF is skipped with a notice",
    async () => {
      const server = await startRealPostgres();
      const notices: string[] = [];
      const owner = postgres(server.as("soma_planner", "planner-password"), { max: 1, onnotice: (n) => notices.push(String(n.message)) });
      try {
        // A managed database's setup role: owns the functions it tunes, is no superuser. No pgvector
        // here, so a stand-in cosine_distance(vector, vector) carries the cost statement.
        const admin = postgres(server.url, { max: 1, onnotice: () => {} });
        await admin
          .unsafe(`
        create role soma_planner login password 'planner-password';
        create extension pg_trgm;
        create domain vector as float8[];
        create function cosine_distance(vector, vector) returns float8 language sql immutable as 'select 0::float8';
        alter function cosine_distance(vector, vector) owner to soma_planner;
        alter function similarity(text, text) owner to soma_planner;
        alter function similarity_op(text, text) owner to soma_planner;
        alter function word_similarity_op(text, text) owner to soma_planner;`)
          .simple();
        await admin.end();

        await applySqlScript(owner, "0400_planner.sql");
        expect(await tuning(owner)).toEqual([
          { name: "cosine_distance", cost: 500, leakproof: false },
          { name: "similarity", cost: 200, leakproof: false },
          { name: "similarity_op", cost: 200, leakproof: false },
          { name: "ts_match_vq", cost: 1, leakproof: false },
          { name: "word_similarity_op", cost: 200, leakproof: false },
        ]);
        expect(notices.filter((n) => /^skipped/.test(n))).toEqual([
          expect.stringMatching(/alter function similarity_op\(text, text\) leakproof/),
          expect.stringMatching(/word_similarity_op\(text, text\) leakproof/),
          expect.stringMatching(/ts_match_vq\(tsvector, tsquery\) leakproof/),
        ]);
      } finally {
        await owner.end({ timeout: 1 });
        server.stop();
      }
    },
  );
});

/**
 * The tables 0100_roles.sql and 0200_rls.sql name, with the columns they use: the migrations need
 * pgvector, which this server lacks. A table newly granted there needs a line here.
 */
const STAND_IN_SCHEMA = `
  create schema auth;
  create table auth.users (id uuid primary key);
  create table auth.sessions (id text primary key);
  create table auth.login_tokens (id text primary key);
  create table auth.deleted_people (id text primary key);
  create table auth.group_chat_notices (id text primary key);
  create table public.users (id uuid primary key, display_name text, timezone text, telegram_chat_id bigint, created_at timestamptz);
  create table public.oauth_connections (id uuid primary key default gen_random_uuid(), user_id uuid, provider text, account_email text, watch_expires_at timestamptz);
  create table public.sources (id uuid primary key default gen_random_uuid(), user_id uuid);
  create table public.entities (id uuid primary key default gen_random_uuid(), user_id uuid, type text, name text, normalized_name text, source_id uuid);
  create table public.edges (id uuid primary key default gen_random_uuid(), user_id uuid, from_id uuid, to_id uuid, source_id uuid);
  create table public.events (id uuid primary key default gen_random_uuid(), user_id uuid, kind text, idempotency_key text, source_id uuid);
  create table public.facts (id uuid primary key default gen_random_uuid(), user_id uuid, source_id uuid);
  create schema search;
  create table search.entity_names (entity_id uuid primary key, user_id uuid);
  create function search.name_matches(q tsquery) returns setof uuid language sql as 'select null::uuid';`;
