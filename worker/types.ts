import type { Database } from "../db/database";
import type { Person } from "../db/repositories/auth";
import type { Config } from "../platform/config";
import type { Telemetry } from "../platform/telemetry/sinks";

/** Hono's environment for every route of the Worker. */
export interface AppEnv {
  Bindings: Env;
  Variables: {
    requestId: string;
    config: Config;
    db: Database;
    /** Product events and the request's log line, flushed with waitUntil when the response is done. */
    telemetry: Telemetry;
    /** Set by requireSession on protected routes. */
    person: Person;
  };
}
