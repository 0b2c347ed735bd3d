// Shared test helpers for the workerd suites: people with sessions, and requests to the real Worker.
import { env, exports } from "cloudflare:workers";
import type { Database } from "../../db/database";
import { workerdDatabase } from "../../db/workerd-socket";
import { createPerson, createSession, type Person } from "../../db/repositories/auth";

let database: Database | undefined;

/** The application's own database handle (RLS helper and all), on the test Postgres. */
export function testDatabase(): Database {
  database ??= workerdDatabase(env.HYPERDRIVE.connectionString);
  return database;
}

/** A new person with a unique name (tests never share people). */
export function newPerson(label = "person"): Promise<Person> {
  return createPerson(testDatabase(), { displayName: `${label}-${crypto.randomUUID().slice(0, 8)}` });
}

/** A Cookie header value carrying a fresh session of `person`. */
export async function sessionCookie(person: Person): Promise<string> {
  return `soma_session=${await createSession(testDatabase(), person.id, 3600)}`;
}

/** A request to the deployed Worker (through its real fetch handler). */
export function call(path: string, init?: RequestInit): Promise<Response> {
  return exports.default.fetch(new Request(`https://soma.test${path}`, init));
}
