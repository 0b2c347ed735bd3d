// `npm run db:query -- "select type, name from entities"`: one statement against Soma's database, its
// rows as a table — to look at what Soma stored without installing a client.
//   the database  DATABASE_URL (the environment, then .env), else the embedded Postgres that `npm start`
//                 is running (its port and password kept beside its data in .soma, or SOMA_STATE_DIR)
//   read only     one statement, in a READ ONLY transaction of a read-only session: this looks, it never
//                 changes memory (chat or the web app do)
// As the URL's role: the embedded one's superuser sees every person's rows; a server's owner-only role
// sees none under the forced row-level security (app.user_id unset).
import postgres from "postgres";
import { runningEmbeddedUrl } from "./embedded-postgres";
import { loadSettings, runMain, stateDirOf, UsageError } from "./cli";

/** A value as one cell: long ones (an embedding's 1,024 numbers) cut, with how long they were. */
const CELL_CHARS = 60;

export function cell(value: unknown): string {
  const text =
    value === null || value === undefined
      ? ""
      : value instanceof Date
        ? value.toISOString()
        : typeof value === "object"
          ? JSON.stringify(value)
          : String(value);
  const line = text.replace(/\s+/g, " ");
  return line.length > CELL_CHARS ? `${line.slice(0, CELL_CHARS - 1)}… (${line.length} chars)` : line;
}

/** Rows as a fixed-width table with a header and a count. */
export function rowsTable(columns: string[], rows: Array<Record<string, unknown>>): string {
  const cells = rows.map((row) => columns.map((column) => cell(row[column])));
  const widths = columns.map((column, i) => Math.max(column.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join(" | ")
      .trimEnd();
  return [
    line(columns),
    widths.map((w) => "-".repeat(w)).join("-+-"),
    ...cells.map(line),
    `(${rows.length} row${rows.length === 1 ? "" : "s"})`,
  ].join("\n");
}

/** The extended protocol for a statement without parameters: postgres.js honours `simple` (its `unsafe`) but does not declare it. */
const EXTENDED = { simple: false } as postgres.UnsafeQueryOptions;

export async function dbQuery(statement: string, settings: Record<string, string>): Promise<string> {
  const url = settings.DATABASE_URL ?? runningEmbeddedUrl(`${stateDirOf(settings)}/pgdata`);
  if (!url) throw new UsageError(`no database: Soma's embedded Postgres is not running (npm start), and DATABASE_URL is not set`);
  // Read only twice over: the session's default and the transaction. And one statement, sent with the
  // extended protocol, which refuses several (a `commit;` first would otherwise end the read-only
  // transaction, and what follows it would write).
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5, connection: { default_transaction_read_only: true } });
  try {
    const result = await sql.begin("read only", (tx) => tx.unsafe(statement, [], EXTENDED));
    const columns = result.columns?.map((c) => c.name) ?? [];
    return columns.length ? rowsTable(columns, result as unknown as Array<Record<string, unknown>>) : `${result.command ?? "done"}`;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ECONNREFUSED") throw new Error(`no database answers at ${new URL(url).host}: is npm start running?`);
    throw error;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

runMain(import.meta, async () => {
  const statement = process.argv.slice(2).join(" ").trim();
  if (!statement) throw new UsageError('usage: npm run db:query -- "select type, name from entities"');
  console.log(await dbQuery(statement, loadSettings(process.env)));
  return 0;
});
