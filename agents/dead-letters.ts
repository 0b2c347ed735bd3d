// DeadLetters: one Durable Object (named "main") holding what Soma could not store or answer, so that
// nothing a person sent is silently lost and no input is retried forever. It depends on nothing but
// its own SQLite storage: it works while Postgres is down.
//
// Two kinds of entries:
// - webhook: an update the Worker could not store after MAX_STORE_ATTEMPTS deliveries failing for a
//   reason that is not an outage; it is acknowledged (200) from then on, so Telegram stops redelivering.
// - inbox: a message an agent set aside (its answer failed for a reason that is not an outage, or the
//   agent died every time it ran it).
// `npm run inbox:dead` lists them (GET /api/ops/dead-letters).
import { DurableObject } from "cloudflare:workers";
import type { DeadLetter } from "./inbox-policy";

/** Failed deliveries of one update (not outages) before it is dead-lettered and acknowledged. */
export const MAX_STORE_ATTEMPTS = 3;
/** How long failed-store counters and dead letters are kept. */
const RETENTION_MS = 30 * 24 * 3600 * 1000;

interface Row {
  key: string;
  origin: "webhook" | "inbox";
  person_id: string | null;
  update_id: number | null;
  chat_id: number | null;
  text: string;
  error: string;
  attempts: number;
  first_at: number;
  last_at: number;
  dead: number;
  [column: string]: SqlStorageValue;
}

export class DeadLetters extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(`create table if not exists letters (
      key text primary key,
      origin text not null,
      person_id text,
      update_id integer,
      chat_id integer,
      text text not null default '',
      error text not null,
      attempts integer not null,
      first_at integer not null,
      last_at integer not null,
      dead integer not null default 0
    )`);
  }

  /**
   * Counts one failed attempt to store `entry`; dead-letters it at MAX_STORE_ATTEMPTS. Returns whether
   * it is dead (the caller then acknowledges the update instead of asking for a redelivery).
   */
  failedToStore(entry: Omit<DeadLetter, "attempts" | "firstAt" | "lastAt" | "origin">): { dead: boolean; attempts: number } {
    const now = Date.now();
    const row = this.ctx.storage.sql
      .exec<Row>(
        `insert into letters (key, origin, person_id, update_id, chat_id, text, error, attempts, first_at, last_at)
         values (?, 'webhook', ?, ?, ?, ?, ?, 1, ?, ?)
         on conflict (key) do update set attempts = attempts + 1, error = excluded.error, last_at = excluded.last_at,
           person_id = coalesce(excluded.person_id, person_id)
         returning *`,
        entry.key,
        entry.personId,
        entry.updateId,
        entry.chatId,
        entry.text,
        entry.error,
        now,
        now,
      )
      .one();
    const dead = row.dead === 1 || row.attempts >= MAX_STORE_ATTEMPTS;
    if (dead && row.dead !== 1) this.ctx.storage.sql.exec(`update letters set dead = 1 where key = ?`, entry.key);
    return { dead, attempts: row.attempts };
  }

  /** Records a message an agent set aside. */
  add(entry: Omit<DeadLetter, "firstAt" | "lastAt" | "origin">): void {
    const now = Date.now();
    this.ctx.storage.sql.exec(
      `insert into letters (key, origin, person_id, update_id, chat_id, text, error, attempts, first_at, last_at, dead)
       values (?, 'inbox', ?, ?, ?, ?, ?, ?, ?, ?, 1)
       on conflict (key) do update set error = excluded.error, attempts = excluded.attempts, last_at = excluded.last_at, dead = 1`,
      entry.key,
      entry.personId,
      entry.updateId,
      entry.chatId,
      entry.text,
      entry.error,
      entry.attempts,
      now,
      now,
    );
  }

  /** Dead letters, newest first. */
  list(limit = 100): DeadLetter[] {
    this.ctx.storage.sql.exec(`delete from letters where last_at < ?`, Date.now() - RETENTION_MS);
    return this.ctx.storage.sql
      .exec<Row>(`select * from letters where dead = 1 order by last_at desc limit ?`, Math.min(Math.max(limit, 1), 1000))
      .toArray()
      .map((row) => ({
        key: row.key,
        origin: row.origin,
        personId: row.person_id,
        updateId: row.update_id,
        chatId: row.chat_id,
        text: row.text,
        error: row.error,
        attempts: row.attempts,
        firstAt: row.first_at,
        lastAt: row.last_at,
      }));
  }

  /** Forgets a person's entries (account deletion). */
  forgetPerson(personId: string): void {
    this.ctx.storage.sql.exec(`delete from letters where person_id = ?`, personId);
  }
}

/** The one DeadLetters object. */
export function deadLetters(env: Env): DurableObjectStub<DeadLetters> {
  return env.DeadLetters.get(env.DeadLetters.idFromName("main"));
}
