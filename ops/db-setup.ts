// `npm run db:setup`: the spec's fixed order, idempotent, separate from deploys.
//   (1) db/sql/0001_extensions.sql  (2) drizzle migrations in db/migrations  (3) the other db/sql scripts
// in file-name order (roles and grants, RLS policies, triggers and the auth mirror).
// Runs under an advisory lock so two concurrent setups cannot interleave.
// It also creates the login role the Worker connects as (DATABASE_WORKER_ROLE, default soma_worker,
// with DATABASE_WORKER_PASSWORD): db/sql/0100_roles.sql says what that role may do.
import { createHash, createHmac, pbkdf2Sync, randomBytes } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";

const root = fileURLToPath(new URL("..", import.meta.url));
const SQL_DIR = `${root}db/sql`;
const MIGRATIONS_DIR = `${root}db/migrations`;
const EXTENSIONS_SCRIPT = "0001_extensions.sql";
const SETUP_LOCK = 7_202_611; // any constant shared by every setup run
export const DEFAULT_WORKER_ROLE = "soma_worker";

/** The Worker's login role: its name, and its password (left unchanged when omitted). */
export interface WorkerLogin {
  role?: string;
  password?: string;
}

export interface SetupOptions {
  worker?: WorkerLogin;
}

export async function setupDatabase(url: string, log: (line: string) => void = () => {}, options: SetupOptions = {}): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    await sql`select pg_advisory_lock(${SETUP_LOCK})`;
    const scripts = (await readdir(SQL_DIR)).filter((f) => f.endsWith(".sql")).sort();
    if (!scripts.includes(EXTENSIONS_SCRIPT)) throw new Error(`${SQL_DIR}/${EXTENSIONS_SCRIPT} is missing`);

    const runScript = (file: string) => applySqlScript(sql, file, options);
    await runScript(EXTENSIONS_SCRIPT);
    log(`applied ${EXTENSIONS_SCRIPT}`);
    await migrate(drizzle(sql), { migrationsFolder: MIGRATIONS_DIR, migrationsSchema: "drizzle" });
    log("applied drizzle migrations");
    for (const script of scripts.filter((f) => f !== EXTENSIONS_SCRIPT)) {
      await runScript(script);
      log(`applied ${script}`);
    }
    await sql`select pg_advisory_unlock(${SETUP_LOCK})`;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/**
 * Runs db/sql/`file` as one simple-protocol batch inside a transaction (all of it or none of it),
 * with the Worker's login role in soma.worker_role / soma.worker_password for 0100_roles.sql.
 */
export async function applySqlScript(sql: postgres.Sql, file: string, options: SetupOptions = {}): Promise<void> {
  const text = await readFile(`${SQL_DIR}/${file}`, "utf8");
  const role = options.worker?.role || DEFAULT_WORKER_ROLE;
  // Only a SCRAM verifier reaches the server (and any statement log), never the password itself.
  const verifier = options.worker?.password ? scramVerifier(options.worker.password) : "";
  await sql.begin(async (tx) => {
    await tx`select set_config('soma.worker_role', ${role}, true), set_config('soma.worker_password', ${verifier}, true)`;
    await tx.unsafe(text).simple();
  });
}

/** `url` with the Worker's login role and password in place of the setup role's. */
export function workerDatabaseUrl(url: string, login: Required<WorkerLogin>): string {
  const parsed = new URL(url);
  parsed.username = encodeURIComponent(login.role);
  parsed.password = encodeURIComponent(login.password);
  return parsed.toString();
}

/** The SCRAM-SHA-256 verifier Postgres stores for `password` (RFC 5803 form, as pg_authid holds it). */
export function scramVerifier(password: string, iterations = 4096): string {
  const salt = randomBytes(16);
  const salted = pbkdf2Sync(password.normalize("NFKC"), salt, iterations, 32, "sha256");
  const storedKey = createHash("sha256").update(createHmac("sha256", salted).update("Client Key").digest()).digest();
  const serverKey = createHmac("sha256", salted).update("Server Key").digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString("base64")}$${storedKey.toString("base64")}:${serverKey.toString("base64")}`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const url = process.env.DATABASE_URL;
  if (!url) {
    console.error("db:setup needs DATABASE_URL (npm start runs the setup against the embedded Postgres itself).");
    process.exit(2);
  }
  const password = process.env.DATABASE_WORKER_PASSWORD;
  if (!password) {
    console.error("db:setup needs DATABASE_WORKER_PASSWORD: the password of the login role the Worker connects as (Hyperdrive).");
    process.exit(2);
  }
  const worker = { role: process.env.DATABASE_WORKER_ROLE || DEFAULT_WORKER_ROLE, password };
  setupDatabase(url, (line) => console.log(`db:setup: ${line}`), { worker }).then(
    () => console.log("db:setup: done"),
    (error: unknown) => {
      console.error(`db:setup failed: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    },
  );
}
