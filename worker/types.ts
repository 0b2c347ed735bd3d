import type { Database } from "../db/database";
import type { Person } from "../db/repositories/auth";
import type { Config } from "../agents/config";

/** Hono's environment for every route of the Worker. */
export interface AppEnv {
  Bindings: Env;
  Variables: {
    requestId: string;
    config: Config;
    db: Database;
    /** Set by requireSession on protected routes. */
    person: Person;
  };
}
