// Shared helpers for the Node suites.
import { createServer } from "node:net";
import { type SQL, sql } from "drizzle-orm";
import postgres from "postgres";
import { Database, type Tx } from "../../db/database";
import { setupDatabase, workerDatabaseUrl } from "../../ops/db-setup";
import { startEmbeddedPostgres } from "../../ops/embedded-postgres";

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
export async function freePort(): Promise<number> {
  // Below Linux's ephemeral range (32768–60999): a port the kernel handed out (listen(0)) is free only
  // until it hands the same one to an outgoing connection, and a service then bound there fails with
  // "Address already in use" (seen once in a CI run). Random, so that files starting services at once differ.
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const server = createServer();
    const bound = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(port, "127.0.0.1", () => resolve(true));
    });
    if (!bound) continue;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
  }
}

/** An embedded Postgres set up as `npm run db:setup` sets it up, and the two ways into it. */
export interface SetUpDatabase {
  /** The database's owner (a superuser): setup, VACUUM, what no person may do. */
  owner: postgres.Sql;
  /** The Worker's login role, as the runtime connects (every unit of work as soma_app, under RLS). */
  db: Database;
  /** The Worker's connection string, for another Database of its own. */
  workerUrl: string;
  stop(): Promise<void>;
}

/** A new embedded Postgres in memory, migrated, with the Worker's login role (`name` is its password). */
export async function setUpEmbeddedDatabase(name: string): Promise<SetUpDatabase> {
  const database = await startEmbeddedPostgres();
  const worker = { role: "soma_worker", password: name };
  await setupDatabase(database.url, () => {}, { worker });
  const owner = postgres(database.url, { max: 1, onnotice: () => {} });
  const workerUrl = workerDatabaseUrl(database.url, worker);
  const db = new Database(workerUrl, { max: 1 });
  return {
    owner,
    db,
    workerUrl,
    async stop() {
      await db.close();
      await owner.end({ timeout: 1 });
      await database.stop();
    },
  };
}

/**
 * How often `statement`, run as `person` (after `prepare`, in the same transaction), scanned the memory
 * names' GIN index and read their whole table: inside search.name_matches, which EXPLAIN does not open,
 * so counted by the server, before and after in one transaction (a server keeps a backend's counts past
 * its transactions until it reports them).
 */
export function nameScans(db: Database, person: string, statement: SQL, prepare?: (tx: Tx) => Promise<void>) {
  return db.withUser(person, async (tx) => {
    const counts = async () =>
      (
        (await tx.execute(sql`select
          pg_stat_get_xact_numscans('search.entity_names_user_search_gin'::regclass)::int as gin,
          pg_stat_get_xact_numscans('search.entity_names'::regclass)::int as "table"`)) as unknown as Array<{ gin: number; table: number }>
      )[0]!;
    await prepare?.(tx);
    const before = await counts();
    await tx.execute(statement);
    const after = await counts();
    return { gin: after.gin - before.gin, table: after.table - before.table };
  });
}
