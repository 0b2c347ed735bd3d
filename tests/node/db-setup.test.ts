// Guards `npm run db:setup`: the spec's fixed order on an empty database, and idempotence — a second
// run exits cleanly and leaves the catalog exactly as the first run did.
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setupDatabase } from "../../ops/db-setup";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../../ops/embedded-postgres";

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

describe("db:setup", () => {
  it("applies the extensions first, then migrations, then the remaining scripts in order", async () => {
    const steps: string[] = [];
    await setupDatabase(database.url, (line) => steps.push(line));
    expect(steps).toEqual([
      "applied 0001_extensions.sql",
      "applied drizzle migrations",
      "applied 0100_roles.sql",
      "applied 0200_rls.sql",
      "applied 0300_triggers.sql",
      "applied 0400_planner.sql",
    ]);
    const publicTables = await sql`select tablename from pg_tables where schemaname = 'public'`;
    expect(publicTables).toHaveLength(7);
  });

  it("is idempotent: a second run changes nothing", async () => {
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
