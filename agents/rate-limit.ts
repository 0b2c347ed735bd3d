// The per-person, per-minute budgets of what reaches the agent (the chat protocol's and Telegram's
// messages, and the notice that tells a person to slow down), counted in the agent's own SQLite
// (soma_rate: one row per counted input, kept for a minute), so a restart forgets nothing.
import type { Config } from "../platform/config";
import type { ObjectSql } from "./object-sql";

/** Per-minute limits per person. `chat` is the budget every channel shares (a Telegram message counts
 * against it too); Telegram's own, lower limit is configurable (TELEGRAM_MESSAGES_PER_MINUTE). */
export const RATE_LIMITS = { telegram: 10, chat: 20, "telegram-notice": 1 } as const satisfies Record<string, number>;
export type RateBudget = keyof typeof RATE_LIMITS;

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
    const { sql } = this;
    const now = Date.now();
    sql`delete from soma_rate where at < ${now - 60_000}`;
    for (const budget of budgets) {
      const used = sql<{ n: number }>`select count(*) as n from soma_rate where channel = ${budget}`[0]?.n ?? 0;
      if (used >= this.limits[budget]) return false;
    }
    for (const budget of budgets) sql`insert into soma_rate (channel, at) values (${budget}, ${now})`;
    return true;
  }
}
