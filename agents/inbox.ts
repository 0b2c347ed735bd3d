// The durable inbox of a person's agent: every Telegram message is stored here before the webhook
// acknowledges it, and answered from here one at a time, in update_id order, exactly once.
//
// Each item goes pending → replied → delivering → done. What can go wrong, and what happens:
// - The agent stops mid-turn (crash, deploy, eviction): the item is still pending; the watchdog alarm
//   (always armed while anything is pending) or the next message resumes it, and the turn runs again.
//   The tools key their writes by source message, so a re-run writes nothing twice.
// - A dependency is down or hangs (Postgres, the model, the Bot API): every call has a deadline; the
//   item stays at the head and is retried with backoff (typing shown meanwhile, one short notice after
//   NOTICE_AFTER_MS) until it is answered, for up to the retry window (INBOX_RETRY_WINDOW_SECONDS).
//   Only then does the person get the apology; the message stays in their conversation.
// - The item itself is the problem (a bug, a poison input, a crash every time it runs): after a few
//   attempts it is set aside as a dead letter with its error, the person gets the apology, and the
//   items behind it go on.
// - The agent stops while a reply is being sent: it is not sent again (at most once for that window:
//   a reply may already have reached Telegram, and a second copy is worse than asking again).
import type { SourceRef } from "../db/repositories/memory";
import type { FailureKind } from "../platform/faults";
import { describeError } from "../platform/log";
import { cleanText, MAX_MESSAGE_CHARS, RATE_NOTICE, TOO_LONG } from "./channels";
import {
  APOLOGY,
  type DeadLetter,
  MAX_PERMANENT_ATTEMPTS,
  NOTICE_AFTER_MS,
  OUTAGE_NOTICE,
  retryDelayMs,
  TelegramInput,
  TEXT_ONLY,
} from "./inbox-policy";
import { createInboxTable, type DocumentReply, type Reply, replyColumns } from "./inbox-schema";
import type { ObjectSql } from "./object-sql";
import type { WebAppButton } from "./integrations/telegram-sender";

export type { DocumentReply, Reply } from "./inbox-schema";
import { extrasOf, type MessageExtras, otherKindReply } from "./telegram-message";

const TELEGRAM_ID_PREFIX = "telegram:";

/** A Telegram message's id in the inbox and the conversation: "telegram:<update id>" (Telegram never reuses an update id). */
function telegramMessageId(updateId: number): string {
  return `${TELEGRAM_ID_PREFIX}${updateId}`;
}

/** Whether a message is a Telegram message's (an inbox item, which the inbox answers and retries); web ones start "web:". */
export function isTelegramMessageId(id: string): boolean {
  return id.startsWith(TELEGRAM_ID_PREFIX);
}

/** The update id in an inbox item's id (a late welcome's "telegram:<update id>:welcome" too); null when there is none. */
function updateIdOf(itemId: string): number | null {
  return Number(itemId.split(":")[1]) || null;
}

/** How long processed ids are kept for dedupe (Telegram redelivers for up to a day). */
const DEDUPE_RETENTION_MS = 7 * 24 * 3600 * 1000;
/** The watchdog alarm is never further away than this while anything is pending. */
const WATCHDOG_MS = 10_000;
/** An attempt that has shown no progress for this long is stuck (every call in it has a shorter deadline). */
export const STUCK_AFTER_MS = 120_000;
/** Attempts that began and never ended (the agent died each time) before the item is set aside. */
const MAX_INTERRUPTED = 5;
/**
 * Concurrent webhook deliveries of one person's updates reach the agent a few milliseconds apart and
 * not always in update_id order: a turn starts only once no message has arrived for this long (and
 * never later than GATHER_MAX_MS), so that a burst is stored whole and answered by update_id.
 */
const GATHER_QUIET_MS = 100;
const GATHER_MAX_MS = 1000;

/** Telegram's limit for a document's caption. */
const CAPTION_LIMIT = 1024;

/** message: answered by a command or the model; notice: the rate-limit notice; welcome: a welcome that arrived late; dropped: over the limit, kept only for dedupe. */
export type InboxKind = "message" | "notice" | "welcome" | "dropped";
type InboxState = "pending" | "replied" | "delivering" | "done" | "failed" | "dead";

export interface InboxItem {
  id: string;
  /** The update id: answered in this order. */
  sort_key: number;
  kind: InboxKind;
  first_contact: number;
  chat_id: number;
  text: string;
  source_ref: string;
  state: InboxState;
  reply: string | null;
  /** The document of the reply (DocumentReply as JSON), whose caption `reply` is; null for text. */
  document: string | null;
  /** "markdown" when `reply` is the model's Markdown (sent formatted); null for text sent as it is. */
  format: string | null;
  /** The button under the reply (WebAppButton as JSON), or null. */
  button: string | null;
  /** What the message holds besides text (MessageExtras as JSON: a voice note, a photo, a forward's sender…). */
  extras: string | null;
  received_at: number;
  attempts: number;
  failures: number;
  interrupted: number;
  in_attempt: number;
  first_failed_at: number | null;
  next_attempt_at: number;
  noticed: number;
  last_error: string | null;
  /** Set when the item will not be answered: the apology is its reply, and its final state. */
  outcome: "failed" | "dead" | null;
  [key: string]: unknown;
}

export interface NewItem {
  id: string;
  sortKey: number;
  firstContact: boolean;
  chatId: number;
  text: string;
  sourceRef: string;
  /** MessageExtras as JSON, or null for plain text. */
  extras: string | null;
}

/**
 * A Telegram message as the inbox stores it (validated, its text cleaned like every channel's): under
 * its update id, in update_id order, with its chat and message ids as the provenance of what it leads to.
 */
export function telegramItem(input: TelegramInput): NewItem {
  const message = TelegramInput.parse(input);
  const source: SourceRef = { kind: "telegram", externalId: `${message.chatId}:${message.messageId}` };
  return {
    id: telegramMessageId(message.updateId),
    sortKey: message.updateId,
    firstContact: message.firstContact,
    chatId: message.chatId,
    text: cleanText(message.text),
    sourceRef: JSON.stringify(source),
    extras: message.extras && Object.keys(message.extras).length > 0 ? JSON.stringify(message.extras) : null,
  };
}

/** What the inbox answers by itself: the rate notice, a late welcome, a message it cannot take (no text,
 * too long); null for a message the host answers (a command or the model). */
function ownReply(item: InboxItem, welcome: string): string | null {
  if (item.kind === "notice") return RATE_NOTICE;
  if (item.kind === "welcome") return welcome;
  const extras = extrasOf(item.extras);
  if (extras.other) return otherKindReply(extras.other);
  if (!item.text.trim() && !extras.attachment) return TEXT_ONLY;
  if (item.text.length > MAX_MESSAGE_CHARS) return TOO_LONG;
  return null;
}

/** An item set aside as dead, as operators find it among the dead letters (agents/dead-letters.ts). */
export function deadLetterOf(personId: string, item: InboxItem, error: string): Omit<DeadLetter, "firstAt" | "lastAt" | "origin"> {
  const { chat_id: chatId, text, attempts } = item;
  // The inbox takes private chats only, whose id is the sender's Telegram id.
  return { key: `${personId}:${item.id}`, personId, senderId: chatId, updateId: updateIdOf(item.id), chatId, text, error, attempts };
}

/** The provenance of an item's message (what the turn that answers it writes is recorded under). */
export function sourceOf(item: InboxItem): SourceRef {
  return JSON.parse(item.source_ref) as SourceRef;
}

export interface InboxHost {
  sql: ObjectSql;
  /** The reply to a message the inbox does not answer itself; throws when it cannot be answered now. Must honour `signal`. */
  answer(item: InboxItem, signal: AbortSignal): Promise<Reply>;
  send(chatId: number, text: string, button?: WebAppButton): Promise<void>;
  /** Sends the model's Markdown, formatted. */
  sendMarkdown(chatId: number, markdown: string): Promise<void>;
  sendDocument(chatId: number, document: DocumentReply, caption: string): Promise<void>;
  /** Best effort "typing…" in the chat. */
  typing(chatId: number): void;
  /** Arms the watchdog alarm to fire at `at` (epoch ms) or earlier. */
  wakeAt(at: number): Promise<void>;
  classify(error: unknown): Promise<FailureKind>;
  /** The item will not be answered: keep it where the person (and an operator, for dead letters) can see it. */
  setAside(item: InboxItem, outcome: "failed" | "dead", error: string): Promise<void>;
  /** Text prepended to the first reply of a person's first contact, and the reply to a late welcome. */
  welcome: string;
  retryWindowMs(): number;
  /** After how long without progress a drain counts as stuck (STUCK_AFTER_MS). */
  stuckAfterMs(): number;
  log(level: "error" | "warn" | "info", fields: Record<string, unknown>): void;
}

export class Inbox {
  #draining: Promise<void> | undefined;
  /** Bumped when a stuck drain is replaced: the old one, if it ever wakes, must not write. */
  #generation = 0;
  #current: AbortController | undefined;
  #beatAt = 0;
  /** When the last message was stored (in memory: after a restart nothing is arriving). */
  #lastArrival = 0;

  constructor(private readonly host: InboxHost) {
    createInboxTable(host.sql);
  }

  has(id: string): boolean {
    return (this.host.sql<{ n: number }>`select count(*) as n from soma_inbox where id = ${id}`[0]?.n ?? 0) > 0;
  }

  /**
   * What a message turned out to say (a voice note's transcript): kept in place of what it held, so a
   * retry does not listen again, and set aside or dead-lettered with the words the person said.
   */
  rewrite(id: string, text: string, extras: MessageExtras): void {
    this.host.sql`update soma_inbox set text = ${text}, extras = ${JSON.stringify(extras)} where id = ${id}`;
  }

  /**
   * Stores a new item and returns its kind, or null when its id was stored before (a redelivery).
   * `kind` is asked only for a new item (it counts the person's rate limit).
   */
  store(item: NewItem, kind: () => InboxKind): InboxKind | null {
    const { sql } = this.host;
    if (this.has(item.id)) {
      if (item.firstContact) this.#lateWelcome(item);
      return null;
    }
    const stored = kind();
    sql`insert into soma_inbox (id, sort_key, kind, first_contact, chat_id, text, source_ref, extras, state, received_at)
        values (${item.id}, ${item.sortKey}, ${stored}, ${item.firstContact ? 1 : 0}, ${item.chatId}, ${item.text}, ${item.sourceRef},
                ${item.extras}, ${stored === "dropped" ? "done" : "pending"}, ${Date.now()})`;
    this.#lastArrival = Date.now();
    return stored;
  }

  /**
   * Concurrent copies of a first message: the copy that created the person may reach the agent after
   * a copy that found the person already there. The welcome goes with the reply if that has not been
   * sent yet, else on its own: the person is welcomed exactly once.
   */
  #lateWelcome(item: NewItem): void {
    const { sql } = this.host;
    const [row] = sql<{ state: InboxState; first_contact: number }>`select state, first_contact from soma_inbox where id = ${item.id}`;
    if (!row || row.first_contact) return;
    sql`update soma_inbox set first_contact = 1 where id = ${item.id}`;
    if (row.state === "pending" || row.state === "replied") return;
    sql`insert or ignore into soma_inbox (id, sort_key, kind, chat_id, text, source_ref, state, received_at)
        values (${`${item.id}:welcome`}, ${item.sortKey}, 'welcome', ${item.chatId}, '', ${item.sourceRef}, 'pending', ${Date.now()})`;
  }

  pendingCount(): number {
    return this.host.sql<{ n: number }>`select count(*) as n from soma_inbox where state in ('pending', 'replied')`[0]?.n ?? 0;
  }

  /** Starts answering (if not already) and resolves when the inbox is empty or waiting for a retry. */
  kick(): Promise<void> {
    if (!this.#draining) {
      const generation = this.#generation;
      this.#beatAt = Date.now();
      const drain = this.#drain(generation).finally(() => {
        if (this.#draining === drain) this.#draining = undefined;
      });
      this.#draining = drain;
    }
    return this.#draining;
  }

  /**
   * The watchdog: re-arms itself while anything is pending, resumes an inbox nobody is draining, and
   * replaces a drain that stopped making progress (its attempt is aborted and never writes again).
   */
  async watchdog(): Promise<void> {
    if (this.#draining && Date.now() - this.#beatAt > this.host.stuckAfterMs()) {
      this.host.log("error", { inbox: "stuck drain replaced", idleMs: Date.now() - this.#beatAt });
      this.#current?.abort(new Error("stuck drain replaced by the watchdog"));
      this.#generation++;
      this.#draining = undefined;
    }
    if (this.pendingCount() > 0) await this.host.wakeAt(Date.now() + WATCHDOG_MS);
    void this.kick();
  }

  /** Whether a drain is running and when it last made progress (operators, tests). */
  status(): { draining: boolean; lastProgressMs: number | null; pending: number } {
    return {
      draining: Boolean(this.#draining),
      lastProgressMs: this.#draining ? Date.now() - this.#beatAt : null,
      pending: this.pendingCount(),
    };
  }

  async #drain(generation: number): Promise<void> {
    const { sql } = this.host;
    for (;;) {
      await this.#gathered();
      if (generation !== this.#generation) return;
      const [item] = sql<InboxItem>`select * from soma_inbox where state in ('pending', 'replied') order by sort_key, seq limit 1`;
      if (!item) break;
      this.#beatAt = Date.now();
      const wait = item.next_attempt_at - Date.now();
      if (wait > 0) {
        // The alarm is the backstop if this isolate goes away while waiting.
        await this.host.wakeAt(item.next_attempt_at);
        this.host.typing(item.chat_id);
        await sleep(wait);
        continue;
      }
      await this.host.wakeAt(Date.now() + WATCHDOG_MS);
      if (item.state === "pending") await this.#answer(item, generation);
      else await this.#deliver(item, generation);
    }
    sql`delete from soma_inbox where state in ('done', 'failed', 'dead') and received_at < ${Date.now() - DEDUPE_RETENTION_MS}`;
  }

  /** Waits until no message has arrived for GATHER_QUIET_MS (at most GATHER_MAX_MS). */
  async #gathered(): Promise<void> {
    const deadline = Date.now() + GATHER_MAX_MS;
    for (;;) {
      const wait = Math.min(this.#lastArrival + GATHER_QUIET_MS, deadline) - Date.now();
      if (wait <= 0) return;
      await sleep(wait);
    }
  }

  async #answer(item: InboxItem, generation: number): Promise<void> {
    const { sql } = this.host;
    const interrupted = item.interrupted + item.in_attempt;
    sql`update soma_inbox set attempts = attempts + 1, in_attempt = 1, interrupted = ${interrupted} where id = ${item.id}`;
    if (interrupted >= MAX_INTERRUPTED) {
      return this.#setAside(
        { ...item, attempts: item.attempts + 1 },
        "dead",
        `the agent stopped during ${interrupted} attempts to answer it`,
      );
    }
    const controller = new AbortController();
    this.#current = controller;
    // In an outage already under way (an earlier attempt failed), the person hears of it at
    // NOTICE_AFTER_MS even while this attempt hangs instead of failing: a database that stops answering
    // holds an attempt for its whole deadline, which would otherwise hold the notice too.
    const noticeDue = item.received_at + NOTICE_AFTER_MS - Date.now();
    const noticeTimer =
      item.first_failed_at !== null && !item.noticed ? setTimeout(() => void this.#notice(item), Math.max(0, noticeDue)) : undefined;
    let reply: Reply;
    try {
      reply = ownReply(item, this.host.welcome) ?? (await this.host.answer(item, controller.signal));
    } catch (error) {
      clearTimeout(noticeTimer);
      if (generation !== this.#generation) return;
      sql`update soma_inbox set in_attempt = 0 where id = ${item.id}`;
      return this.#failed({ ...item, attempts: item.attempts + 1 }, error);
    }
    clearTimeout(noticeTimer);
    if (generation !== this.#generation) return;
    const { text, document, format, button } = replyColumns(reply);
    sql`update soma_inbox set state = 'replied', reply = ${text}, document = ${document}, format = ${format}, button = ${button},
        in_attempt = 0, first_failed_at = null, next_attempt_at = 0 where id = ${item.id}`;
  }

  async #deliver(item: InboxItem, generation: number): Promise<void> {
    const { sql } = this.host;
    const reply = item.reply ?? APOLOGY;
    const welcomed = item.first_contact && !reply.startsWith(this.host.welcome) ? `${this.host.welcome}\n\n${reply}` : reply;
    sql`update soma_inbox set state = 'delivering' where id = ${item.id}`;
    try {
      if (item.document) {
        // A caption has a limit of its own: a welcome that would not fit is left out.
        const caption = welcomed.length <= CAPTION_LIMIT ? welcomed : reply;
        await this.host.sendDocument(item.chat_id, JSON.parse(item.document) as DocumentReply, caption);
      } else if (item.format === "markdown") await this.host.sendMarkdown(item.chat_id, welcomed);
      else await this.host.send(item.chat_id, welcomed, item.button ? (JSON.parse(item.button) as WebAppButton) : undefined);
    } catch (error) {
      if (generation !== this.#generation) return;
      if ((await this.host.classify(error)) === "permanent") {
        // Telegram refused the message itself (the chat is gone, the bot was blocked): nothing to retry.
        this.host.log("error", { inbox: item.id, delivery: describeError(error) });
        sql`update soma_inbox set state = coalesce(outcome, 'done'), last_error = ${describeError(error)} where id = ${item.id}`;
        return;
      }
      sql`update soma_inbox set state = 'replied' where id = ${item.id}`;
      return this.#failed({ ...item, attempts: item.attempts + 1 }, error, "transient");
    }
    if (generation !== this.#generation) return;
    sql`update soma_inbox set state = coalesce(outcome, 'done'), first_failed_at = null, next_attempt_at = 0 where id = ${item.id}`;
  }

  /** One failed attempt: try again later (an outage), or give up (past the window, or not an outage). */
  async #failed(item: InboxItem, error: unknown, known?: FailureKind): Promise<void> {
    const { sql } = this.host;
    const kind = known ?? (await this.host.classify(error));
    const now = Date.now();
    const firstFailedAt = item.first_failed_at ?? now;
    const failures = item.failures + (kind === "permanent" ? 1 : 0);
    const message = describeError(error);
    this.host.log(kind === "permanent" ? "error" : "warn", {
      inbox: item.id,
      phase: item.state,
      failure: kind,
      attempt: item.attempts,
      error: message,
    });
    if (item.state === "pending" && kind === "permanent" && failures >= MAX_PERMANENT_ATTEMPTS)
      return this.#setAside(item, "dead", message);
    if (now - firstFailedAt >= this.host.retryWindowMs()) {
      if (item.state === "pending") return this.#setAside(item, "failed", message);
      // The reply itself could not be delivered for the whole window: it stays stored, undelivered.
      sql`update soma_inbox set state = 'failed', last_error = ${message} where id = ${item.id}`;
      return;
    }
    let next = now + retryDelayMs(item.attempts);
    // The notice counts from when the person wrote: that is how long they have been waiting.
    const noticeDue = now - item.received_at >= NOTICE_AFTER_MS;
    const [{ noticed } = { noticed: 1 }] = sql<{ noticed: number }>`select noticed from soma_inbox where id = ${item.id}`;
    if (!noticed && !noticeDue) next = Math.min(next, item.received_at + NOTICE_AFTER_MS);
    sql`update soma_inbox set failures = ${failures}, first_failed_at = ${firstFailedAt}, next_attempt_at = ${next},
        last_error = ${message} where id = ${item.id}`;
    await this.host.wakeAt(next);
    if (noticeDue) await this.#notice(item);
  }

  /** The outage notice, at most once per message, even if sending it fails (the Bot API may be what is down). */
  async #notice(item: InboxItem): Promise<void> {
    const claimed = this.host.sql<{ id: string }>`update soma_inbox set noticed = 1 where id = ${item.id} and noticed = 0 returning id`;
    if (claimed.length === 0) return;
    await this.host
      .send(item.chat_id, OUTAGE_NOTICE)
      .catch((sendError: unknown) => this.host.log("warn", { inbox: item.id, notice: describeError(sendError) }));
  }

  /** Gives up on answering: the apology is the reply, and the item keeps its error. */
  async #setAside(item: InboxItem, outcome: "failed" | "dead", error: string): Promise<void> {
    await this.host
      .setAside(item, outcome, error)
      .catch((setAsideError: unknown) => this.host.log("error", { inbox: item.id, setAside: describeError(setAsideError) }));
    this.host
      .sql`update soma_inbox set state = 'replied', reply = ${APOLOGY}, document = null, format = null, outcome = ${outcome}, in_attempt = 0,
                  first_failed_at = null, next_attempt_at = 0, last_error = ${error} where id = ${item.id}`;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
