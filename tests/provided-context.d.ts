// Values tests/setup/postgres.ts provides to every test project.
import "vitest";

declare module "vitest" {
  interface ProvidedContext {
    /** The embedded Postgres, set up like production (extensions, migrations, roles, RLS). */
    databaseUrl: string;
    /** The same database as the Worker's login role (soma_worker): the HYPERDRIVE binding's URL. */
    workerDatabaseUrl: string;
    /** A TCP server that accepts connections and never answers: a hung database. */
    hangingDatabaseUrl: string;
    /** tests/setup/stand-ins.ts: Bot API at /bot<token>/…, chat completions at /v1. */
    standInUrl: string;
  }
}
