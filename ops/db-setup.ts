// `npm run db:setup`: the spec's fixed order, idempotent, separate from deploys.
//   (1) db/sql/0001_extensions.sql  (2) drizzle migrations in db/migrations  (3) the other db/sql scripts
// in file-name order (roles and grants, RLS policies, triggers and the auth mirror).
// Runs under an advisory lock so two concurrent setups cannot interleave.
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

export async function setupDatabase(url: string, log: (line: string) => void = () => {}): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    await sql`select pg_advisory_lock(${SETUP_LOCK})`;
    const scripts = (await readdir(SQL_DIR)).filter((f) => f.endsWith(".sql")).sort();
    if (!scripts.includes(EXTENSIONS_SCRIPT)) throw new Error(`${SQL_DIR}/${EXTENSIONS_SCRIPT} is missing`);

    await runScript(sql, EXTENSIONS_SCRIPT);
    log(`applied ${EXTENSIONS_SCRIPT}`);
    await migrate(drizzle(sql), { migrationsFolder: MIGRATIONS_DIR, migrationsSchema: "drizzle" });
    log("applied drizzle migrations");
    for (const script of scripts.filter((f) => f !== EXTENSIONS_SCRIPT)) {
      await runScript(sql, script);
      log(`applied ${script}`);
    }
    await sql`select pg_advisory_unlock(${SETUP_LOCK})`;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

async function runScript(sql: postgres.Sql, file: string): Promise<void> {
  const text = await readFile(`${SQL_DIR}/${file}`, "utf8");
  // Each script is one simple-protocol batch inside a transaction: all of it or none of it.
  await sql.begin((tx) => tx.unsafe(text).simple());
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const url = process.env.DATABASE_URL;
  if (!url) {
    console.error("db:setup needs DATABASE_URL (npm start runs the setup against the embedded Postgres itself).");
    process.exit(2);
  }
  setupDatabase(url, (line) => console.log(`db:setup: ${line}`)).then(
    () => console.log("db:setup: done"),
    (error: unknown) => {
      console.error(`db:setup failed: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    },
  );
}
