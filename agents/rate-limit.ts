// The per-person, per-minute budgets of what reaches the agent (the chat protocol's and Telegram's
// messages, and the notice that tells a person to slow down) and of the web API's costly requests
// (import, export, search, the edits that embed), counted in the agent's own SQLite (soma_rate: one row
// per counted input, kept for a minute), so a restart forgets nothing.
import { z } from "zod";
import type { Config } from "../platform/config";
import type { ObjectSql } from "./object-sql";

/**
 * Per-minute limits per person. `chat` is the budget every channel shares (a Telegram message counts
 * against it too); Telegram's own, lower limit is configurable (TELEGRAM_MESSAGES_PER_MINUTE).
 * The web API's budgets are generous for a person and tight for a script:
 * - import: 6 (a preview and an import are two; three files a minute). Each one reads up to a 4 MB
 *   file and may hand thousands of memories to the embedder.
 * - export: 4. Each one reads the person's whole memory; a person downloads it now and then.
 * - search: 60. The memory page searches after a pause in typing; each search embeds its words.
 * - edit: 30 (a memory's and a fact's changes together). A rename or a corrected statement embeds.
 * - import-batch: 60 batches of an import of conversations from another assistant (each up to 4 MB of
 *   conversations, stored as they are; reading them is the import's own budget, IMPORT_MODEL_CALLS).
 * - media: 6 voice notes and photos (on top of `telegram` and `chat`): each one is downloaded and
 *   transcribed or looked at, which costs a model call of its own.
 */
export const RATE_LIMITS = {
  telegram: 10,
  chat: 20,
  "telegram-notice": 1,
  import: 6,
  "import-batch": 60,
  export: 4,
  search: 60,
  edit: 30,
  media: 6,
} as const satisfies Record<string, number>;
export type RateBudget = keyof typeof RATE_LIMITS;

/** The budgets of the web API's and the MCP server's costly requests, spent through UserAgent.spend
 * (`chat`: an MCP call that asks the model, as a message does). */
export const ApiBudget = z.enum(["import", "import-batch", "export", "search", "edit", "chat"]);
export type ApiBudget = z.infer<typeof ApiBudget>;

/** Whether an input was counted, or how many seconds until one more would be. */
export type RateVerdict = { ok: true } | { ok: false; retryAfterSeconds: number };

const WINDOW_MS = 60_000;

/** The limits in force: RATE_LIMITS, with Telegram's as configured. */
export function rateLimitsFor(config: Config): Record<RateBudget, number> {
  return { ...RATE_LIMITS, telegram: config.TELEGRAM_MESSAGES_PER_MINUTE };
}

export class RateLimiter {
  constructor(
    private readonly sql: ObjectSql,
    private readonly limits: Record<RateBudget, number>,
  ) {
    // The column is called `channel` (the rows are stored data); it holds a budget's name.
    sql`create table if not exists soma_rate (channel text not null, at integer not null)`;
    sql`create index if not exists soma_rate_channel_at on soma_rate (channel, at)`;
  }

  /** Counts one input against each of `budgets` and says whether it is within all their per-minute
   * limits (a refused input counts against none). */
  allow(...budgets: RateBudget[]): boolean {
    return this.take(...budgets).ok;
  }

  /** As `allow`, and when refused: the seconds until every budget over its limit has a slot again. */
  take(...budgets: RateBudget[]): RateVerdict {
    const { sql } = this;
    const now = Date.now();
    sql`delete from soma_rate where at < ${now - WINDOW_MS}`;
    let freesAt = 0;
    for (const budget of budgets) {
      const used = sql<{ n: number }>`select count(*) as n from soma_rate where channel = ${budget}`[0]?.n ?? 0;
      const over = used - this.limits[budget];
      if (over < 0) continue;
      // A slot frees when the row that brought the count to the limit leaves the window: the oldest,
      // unless the limit was lowered under what was already counted.
      const row = sql<{ at: number }>`select at from soma_rate where channel = ${budget} order by at limit 1 offset ${over}`[0];
      freesAt = Math.max(freesAt, (row?.at ?? now) + WINDOW_MS);
    }
    if (freesAt > 0) return { ok: false, retryAfterSeconds: Math.min(60, Math.max(1, Math.ceil((freesAt - now) / 1000))) };
    for (const budget of budgets) sql`insert into soma_rate (channel, at) values (${budget}, ${now})`;
    return { ok: true };
  }
}
