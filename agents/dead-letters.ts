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
//
// A letter holds a person's words, so it is kept no longer than it must be and goes with the account:
// each carries the sender's Telegram id (a webhook letter may have been written before anyone knew
// whose it was), account deletion forgets the letters of the person's id and of their Telegram id, and
// letters and failed-store counters older than DEAD_LETTER_RETENTION_MS are pruned on every write and
// by an alarm that stays armed while anything is kept — not only when an operator lists them.
import { DurableObject } from "cloudflare:workers";
import type { DeadLetter } from "./inbox-policy";

/** Failed deliveries of one update (not outages) before it is dead-lettered and acknowledged. */
export const MAX_STORE_ATTEMPTS = 3;
/** How long failed-store counters and dead letters are kept. */
export const DEAD_LETTER_RETENTION_MS = 30 * 24 * 3600 * 1000;
/** How often the alarm prunes while anything is kept. */
const PRUNE_EVERY_MS = 24 * 3600 * 1000;

interface Row {
  key: string;
  origin: "webhook" | "inbox";
  person_id: string | null;
  sender_id: number | null;
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
      dead integer not null default 0,
      sender_id integer
    )`);
    // Objects created before letters knew their sender get the column (null for the letters they hold:
    // forgetPerson matches those by their private chat, whose id is the sender's).
    const columns = ctx.storage.sql.exec<{ name: string }>(`select name from pragma_table_info('letters')`).toArray();
    if (!columns.some((c) => c.name === "sender_id")) ctx.storage.sql.exec(`alter table letters add column sender_id integer`);
  }

  /**
   * Counts one failed attempt to store `entry`; dead-letters it at MAX_STORE_ATTEMPTS. Returns whether
   * it is dead (the caller then acknowledges the update instead of asking for a redelivery).
   */
  async failedToStore(entry: Omit<DeadLetter, "attempts" | "firstAt" | "lastAt" | "origin">): Promise<{ dead: boolean; attempts: number }> {
    const now = this.#pruned();
    const row = this.ctx.storage.sql
      .exec<Row>(
        `insert into letters (key, origin, person_id, sender_id, update_id, chat_id, text, error, attempts, first_at, last_at)
         values (?, 'webhook', ?, ?, ?, ?, ?, ?, 1, ?, ?)
         on conflict (key) do update set attempts = attempts + 1, error = excluded.error, last_at = excluded.last_at,
           person_id = coalesce(excluded.person_id, person_id), sender_id = coalesce(excluded.sender_id, sender_id)
         returning *`,
        entry.key,
        entry.personId,
        entry.senderId,
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
    await this.#armPruning();
    return { dead, attempts: row.attempts };
  }

  /** Records a message an agent set aside. */
  async add(entry: Omit<DeadLetter, "firstAt" | "lastAt" | "origin">): Promise<void> {
    const now = this.#pruned();
    this.ctx.storage.sql.exec(
      `insert into letters (key, origin, person_id, sender_id, update_id, chat_id, text, error, attempts, first_at, last_at, dead)
       values (?, 'inbox', ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
       on conflict (key) do update set error = excluded.error, attempts = excluded.attempts, last_at = excluded.last_at, dead = 1`,
      entry.key,
      entry.personId,
      entry.senderId,
      entry.updateId,
      entry.chatId,
      entry.text,
      entry.error,
      entry.attempts,
      now,
      now,
    );
    await this.#armPruning();
  }

  /** Dead letters, newest first. */
  list(limit = 100): DeadLetter[] {
    this.#pruned();
    return this.ctx.storage.sql
      .exec<Row>(`select * from letters where dead = 1 order by last_at desc limit ?`, Math.min(Math.max(limit, 1), 1000))
      .toArray()
      .map((row) => ({
        key: row.key,
        origin: row.origin,
        personId: row.person_id,
        senderId: row.sender_id,
        updateId: row.update_id,
        chatId: row.chat_id,
        text: row.text,
        error: row.error,
        attempts: row.attempts,
        firstAt: row.first_at,
        lastAt: row.last_at,
      }));
  }

  /**
   * Forgets a person's entries (account deletion): those of their id, and — given their Telegram id —
   * those of updates they sent, found by sender or by their private chat (whose id is the sender's;
   * letters written before they carried a sender have only that).
   */
  forgetPerson(personId: string, telegramUserId: number | null = null): void {
    this.ctx.storage.sql.exec(
      `delete from letters where person_id = ? or (? is not null and (sender_id = ? or chat_id = ?))`,
      personId,
      telegramUserId,
      telegramUserId,
      telegramUserId,
    );
  }

  /** Prunes what is past its retention; when nothing is left, the alarm is not re-armed. */
  override async alarm(): Promise<void> {
    this.#pruned();
    const [kept] = this.ctx.storage.sql.exec<{ n: number }>(`select count(*) as n from letters`).toArray();
    if ((kept?.n ?? 0) > 0) await this.ctx.storage.setAlarm(Date.now() + PRUNE_EVERY_MS);
  }

  /** Deletes letters and counters older than the retention; returns the time it pruned at. */
  #pruned(): number {
    const now = Date.now();
    this.ctx.storage.sql.exec(`delete from letters where last_at < ?`, now - DEAD_LETTER_RETENTION_MS);
    return now;
  }

  /** After a write: the alarm that prunes, unless one is already set. */
  async #armPruning(): Promise<void> {
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + PRUNE_EVERY_MS);
  }
}

/** The one DeadLetters object. */
export function deadLetters(env: Env): DurableObjectStub<DeadLetters> {
  return env.DeadLetters.get(env.DeadLetters.idFromName("main"));
}
