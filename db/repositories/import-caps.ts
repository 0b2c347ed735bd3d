// What one import may do (issue 19, finding 2), checked inside the import's transaction by ./export.ts:
// the rows of the file before anything is written, and what the account would then hold after its rows
// went in. A file past a cap is refused whole (ImportCapError; the transaction rolls back), saying
// which cap, its limit and the number the file would have made.
import { sql } from "drizzle-orm";
import { sqlRows, type Tx } from "../database";
import { lockedFutureReminderCount } from "./reminders";

/**
 * What one import may add, and what it may bring an account to:
 * - rows: 5,000 in one file (sources, entities, facts, relations and events together), about a year of
 *   daily use; a realistic file of that many fits the import's 4 MB (worker/routes/export.ts). Each
 *   memory it adds is embedded afterwards.
 * - memories: 20,000 entities and facts in an account, which memory-consolidate's backfill after an
 *   import embeds in full (200 steps of 100). Refused only when the import adds some.
 * - futureReminders: 100 reminders still to come in an account, each a Telegram message when it falls
 *   due (five minutes of the chat budget should they all fall due at once). Refused only when the
 *   import adds some, so a file re-imported with fresh ids cannot schedule past it.
 */
export const IMPORT_CAPS = { rows: 5_000, memories: 20_000, futureReminders: 100 } as const;

/** A file past one of IMPORT_CAPS: which, its limit and the number the file would have made. */
export class ImportCapError extends Error {
  constructor(
    readonly cap: keyof typeof IMPORT_CAPS,
    readonly count: number,
  ) {
    super(capMessage(cap, count));
    this.name = "ImportCapError";
  }
}

function capMessage(cap: keyof typeof IMPORT_CAPS, count: number): string {
  const n = (value: number) => value.toLocaleString("en-US");
  const limit = n(IMPORT_CAPS[cap]);
  switch (cap) {
    case "rows":
      return `This file holds ${n(count)} rows (sources, memories, facts, relations and events); an import takes at most ${limit}.`;
    case "memories":
      return `This import would bring your memory to ${n(count)} memories and facts; an account holds at most ${limit}.`;
    case "futureReminders":
      return `This import would leave you ${n(count)} reminders still to come; an account has at most ${limit}.`;
  }
}

/** The rows of one file against IMPORT_CAPS.rows, before anything is written. */
export function checkFileRows(file: Record<"sources" | "entities" | "facts" | "edges" | "events", readonly unknown[]>): void {
  const rows = file.sources.length + file.entities.length + file.facts.length + file.edges.length + file.events.length;
  if (rows > IMPORT_CAPS.rows) throw new ImportCapError("rows", rows);
}

/**
 * After the rows went in, not yet committed: the account's memories and reminders still to come, counted
 * under row-level security (what the import added included) against IMPORT_CAPS. A cap is only checked
 * when the import added to it: a file that adds nothing new is never refused.
 */
export async function checkAccountCaps(
  tx: Tx,
  userId: string,
  added: { memories: number; futureReminders: number },
  now: Date,
): Promise<void> {
  if (added.memories > 0) {
    const [row] = await sqlRows<{ n: number }>(
      tx,
      sql`select (select count(*) from entities where user_id = ${userId})::int + (select count(*) from facts where user_id = ${userId})::int as n`,
    );
    if (row && row.n > IMPORT_CAPS.memories) throw new ImportCapError("memories", row.n);
  }
  if (added.futureReminders > 0) {
    // Counted as the model's schedule_create counts them, under the same lock: an import and a turn at
    // once cannot both take the last place.
    const waiting = await lockedFutureReminderCount(tx, userId, now);
    if (waiting > IMPORT_CAPS.futureReminders) throw new ImportCapError("futureReminders", waiting);
  }
}
