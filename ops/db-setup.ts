// `npm run db:setup`: the spec's fixed order, idempotent, separate from deploys; run it again on
// every schema change.
//   (1) db/sql/0001_extensions.sql  (2) drizzle migrations in db/migrations  (3) the other db/sql scripts
// in file-name order (roles and grants, RLS policies, triggers and the auth mirror).
// Runs under an advisory lock so two concurrent setups cannot interleave.
// It also keeps the login role the Worker connects as (DATABASE_WORKER_ROLE, default soma_worker):
// db/sql/0100_roles.sql says what that role may do. DATABASE_URL is all a re-run needs: without
// DATABASE_WORKER_PASSWORD the role keeps the password it has; with it, the password is set (rotated).
// Only the run that creates the role needs the password: without one it stops (exit 2) before
// applying anything, since a login role without a password could never log in.
import { createHash, createHmac, pbkdf2Sync, randomBytes } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { runMain, UsageError } from "./cli";

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
    await checkWorkerLogin(sql, options.worker, log);
    const scripts = (await readdir(SQL_DIR)).filter((f) => f.endsWith(".sql")).sort();
    if (!scripts.includes(EXTENSIONS_SCRIPT)) throw new Error(`${SQL_DIR}/${EXTENSIONS_SCRIPT} is missing`);

    const runScript = (file: string) => applySqlScript(sql, file, options);
    await runScript(EXTENSIONS_SCRIPT);
    log(`applied ${EXTENSIONS_SCRIPT}`);
    const applied = await appliedMigrations(sql);
    await migrate(drizzle(sql), { migrationsFolder: MIGRATIONS_DIR, migrationsSchema: "drizzle" });
    log("applied drizzle migrations");
    if ((await appliedMigrations(sql)) > applied) {
      // A migration may have rewritten a memory table (0017 did): its visibility map is then empty, so
      // recall's index-only scans (migration 0018) would read the table until autovacuum came by, and
      // its new columns have no statistics for the planner. VACUUM runs outside a transaction.
      await sql`vacuum (analyze) entities, facts, search.entity_names`;
      log("vacuumed and analyzed the memory tables");
    }
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
 * Before anything is applied: without a password the Worker's login role must exist already (its
 * password then stays as it is); creating it needs one. A UsageError (exit 2) names what is missing.
 */
async function checkWorkerLogin(sql: postgres.Sql, worker: WorkerLogin | undefined, log: (line: string) => void): Promise<void> {
  if (worker?.password) return;
  const role = worker?.role || DEFAULT_WORKER_ROLE;
  const [existing] = await sql`select 1 from pg_roles where rolname = ${role}`;
  if (!existing) {
    throw new UsageError(
      `db:setup: the Worker's login role ${role} does not exist yet, and the run that creates it needs its password: ` +
        "set DATABASE_WORKER_PASSWORD (e.g. `openssl rand -hex 32`, the password Hyperdrive connects with). " +
        "Later runs may leave it out and keep that password. Nothing was applied.",
    );
  }
  log(`login role ${role} exists; no DATABASE_WORKER_PASSWORD given: its password left unchanged`);
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

/** How many drizzle migrations the database has applied (0 before the first). */
async function appliedMigrations(sql: postgres.Sql): Promise<number> {
  const [table] = await sql<[{ exists: boolean }]>`select to_regclass('drizzle.__drizzle_migrations') is not null as exists`;
  if (!table.exists) return 0;
  const [row] = await sql<[{ n: number }]>`select count(*)::int as n from drizzle.__drizzle_migrations`;
  return row.n;
}

runMain(import.meta, async () => {
  const url = process.env.DATABASE_URL;
  if (!url) throw new UsageError("db:setup needs DATABASE_URL (npm start runs the setup against the embedded Postgres itself).");
  // Optional on a re-run: omitted, the login role keeps its password (checkWorkerLogin).
  const worker = {
    role: process.env.DATABASE_WORKER_ROLE || DEFAULT_WORKER_ROLE,
    password: process.env.DATABASE_WORKER_PASSWORD || undefined,
  };
  try {
    await setupDatabase(url, (line) => console.log(`db:setup: ${line}`), { worker });
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new Error(`db:setup failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  console.log("db:setup: done");
  return 0;
});
