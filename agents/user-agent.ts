// UserAgent: one Durable Object per person, named by users.id (worker/agent-routing.ts picks it; a
// client never does). It owns the person's conversation — one thread for Telegram and the web —, a
// durable inbox of channel messages with processed-id dedupe, and per-channel rate limits. Memory
// lives in Postgres and is reached only through Database.withUser with this agent's name.
//
// Inbox invariants: an input is stored before it is acknowledged; inputs are answered one at a time
// in Telegram's order (update_id); a crash or eviction mid-turn resumes from storage (onStart and a watchdog alarm);
// the same id twice is answered once; a reply is sent at most once.
import { AIChatAgent, type OnChatMessageOptions } from "@cloudflare/ai-chat";
import {
  convertToModelMessages,
  createUIMessageStream,
  createUIMessageStreamResponse,
  isStepCount,
  streamText,
  type LanguageModel,
  type UIMessage,
  type UIMessageChunk,
} from "ai";
import { z } from "zod";
import type { Database } from "../db/database";
import type { SourceRef } from "../db/repositories/memory";
import { workerdDatabase } from "../db/workerd-socket";
import { loadConfig } from "./config";
import { describeError, logJson } from "./log";
import { createChatModel } from "./model/chat-model";
import { createEmbedder } from "./model/embeddings";
import { systemPrompt } from "./system-prompt";
import { answerCommand, WELCOME } from "./telegram-commands";
import { TelegramSender } from "./telegram-sender";
import { createTracer, type Surface, type Tracer } from "./telemetry/tracer";
import { createTelemetry } from "./telemetry/sinks";
import { memoryTools, type MemoryActivity } from "./tools";
import { emitEvents } from "./workflows/client";
import { reminderCreated, turnCompleted } from "./workflows/events";

/** Whole-turn budget: model steps and tools together. */
export const TURN_BUDGET_MS = 20_000;
/** Tool-loop steps per turn. */
const MAX_STEPS = 5;
/** Messages the model sees; older ones stay stored but out of the prompt. */
const MODEL_WINDOW = 40;
/** How long processed ids are kept for dedupe (Telegram redelivers for up to a day). */
const DEDUPE_RETENTION_MS = 7 * 24 * 3600 * 1000;
/** If a drain dies with the isolate, this alarm picks the inbox up again. */
const WATCHDOG_SECONDS = 30;
/**
 * Concurrent webhook deliveries of one person's updates reach the agent a few milliseconds apart and
 * not always in update_id order: a turn starts only once no message has arrived for this long (and
 * never later than GATHER_MAX_MS), so that a burst is stored whole and answered by update_id.
 */
const GATHER_QUIET_MS = 100;
const GATHER_MAX_MS = 1000;

const SSE = new TextEncoder();

export const APOLOGY = "Sorry, I couldn't think that through just now. Your message is saved; please try again in a moment.";

/** Per-minute limits per person (Telegram's is configurable: TELEGRAM_MESSAGES_PER_MINUTE). */
export const RATE_LIMITS = { telegram: 10, chat: 20, "telegram-notice": 1 } as const satisfies Record<string, number>;
export type Channel = keyof typeof RATE_LIMITS;

/** Longest message a person may send through any door. */
export const MAX_MESSAGE_CHARS = 8000;

/** Longest Telegram text (or caption) the inbox stores; the webhook refuses longer ones with 400. */
export const MAX_TELEGRAM_TEXT_CHARS = 20_000;

export const TelegramInput = z.object({
  updateId: z.number().int().nonnegative(),
  chatId: z.number().int(),
  messageId: z.number().int().nonnegative(),
  text: z.string().max(MAX_TELEGRAM_TEXT_CHARS),
  /** The sender was created by this message: the reply starts with the welcome. */
  firstContact: z.boolean().default(false),
});
export type TelegramInput = z.input<typeof TelegramInput>;

export const RATE_NOTICE = "You're writing faster than I can think. Give me a minute, then send it again.";
export const TEXT_ONLY = "I can only read text messages for now.";

type InboxState = "pending" | "replied" | "delivering" | "done";

/** message: answered by a command or the model; notice: the rate-limit notice; dropped: over the limit, kept only for dedupe. */
type InboxKind = "message" | "notice" | "dropped";

interface InboxRow {
  id: string;
  kind: InboxKind;
  first_contact: number;
  chat_id: number;
  text: string;
  source_ref: string;
  state: InboxState;
  reply: string | null;
  [key: string]: unknown;
}

interface MessageSource {
  source?: SourceRef;
}

export class UserAgent extends AIChatAgent<Env> {
  // The instance name is the person's own id, sent only to their own authenticated socket.
  static override options = { sendIdentityOnConnect: true };
  override maxPersistedMessages = 500;
  /** Replaces the configured model; tests set it through runInDurableObject with a scripted model. */
  modelOverride: LanguageModel | undefined;
  /** The whole-turn budget; tests shorten it to exercise the timeout path. */
  turnBudgetMs = TURN_BUDGET_MS;
  #draining: Promise<void> | undefined;
  /** When the last Telegram message was stored (in memory: after a restart nothing is arriving). */
  #lastArrival = 0;
  /** HTTP clients of `chat()` waiting for the chunks of their turn, by user message id. */
  readonly #listeners = new Map<string, WritableStreamDefaultWriter<Uint8Array>>();
  #database: Database | undefined;
  #telegram: TelegramSender | undefined;
  #tracer: Tracer | undefined;

  override async onStart(): Promise<void> {
    this.sql`create table if not exists soma_inbox (
      seq integer primary key autoincrement,
      id text not null unique,
      sort_key integer not null,
      kind text not null default 'message',
      first_contact integer not null default 0,
      chat_id integer not null,
      text text not null,
      source_ref text not null,
      state text not null default 'pending',
      reply text,
      received_at integer not null
    )`;
    this.sql`create table if not exists soma_rate (channel text not null, at integer not null)`;
    this.sql`create index if not exists soma_rate_channel_at on soma_rate (channel, at)`;
    if (this.#pendingCount() > 0) this.#kick();
  }

  /** The person this agent belongs to. */
  get userId(): string {
    return this.name;
  }

  /**
   * Stores a Telegram message and returns at once; the reply is sent by the inbox drain.
   * `duplicate` when this update was seen before, `rate_limited` when the person is over the limit.
   */
  async enqueueTelegramMessage(input: TelegramInput): Promise<{ status: "queued" | "duplicate" | "rate_limited" }> {
    const message = TelegramInput.parse(input);
    const id = `telegram:${message.updateId}`;
    if (this.sql<{ n: number }>`select count(*) as n from soma_inbox where id = ${id}`[0]?.n) {
      // Concurrent deliveries of a first message: the one that created the person may arrive after a
      // copy that found the person already there; the welcome must not be lost to that race.
      if (message.firstContact) this.sql`update soma_inbox set first_contact = 1 where id = ${id} and state = 'pending'`;
      return { status: "duplicate" };
    }
    const source: SourceRef = { kind: "telegram", externalId: `${message.chatId}:${message.messageId}` };
    // Over the limit the update is still recorded (so a redelivery stays a duplicate) and answered with
    // one notice a minute at most; the model never sees it.
    const kind: InboxKind = this.allow("telegram") ? "message" : this.allow("telegram-notice") ? "notice" : "dropped";
    // Telegram numbers updates in the order it received them; concurrent deliveries can reach us in
    // another order, so pending messages are answered by update_id.
    this.sql`insert into soma_inbox (id, sort_key, kind, first_contact, chat_id, text, source_ref, state, received_at)
             values (${id}, ${message.updateId}, ${kind}, ${message.firstContact ? 1 : 0},
                     ${message.chatId}, ${message.text}, ${JSON.stringify(source)}, ${kind === "dropped" ? "done" : "pending"}, ${Date.now()})`;
    this.#lastArrival = Date.now();
    if (kind !== "message") {
      if (kind === "notice") this.#kick();
      return { status: "rate_limited" };
    }
    // One pending watchdog is enough, however many messages arrive.
    const watched = (await this.listSchedules({ type: "delayed" })).some((s) => s.callback === "resumeInbox");
    if (!watched) await this.schedule(WATCHDOG_SECONDS, "resumeInbox");
    this.#kick();
    return { status: "queued" };
  }

  /**
   * One chat turn for an API client, in the same conversation and turn queue as every other door,
   * streamed as the AI SDK UI message stream (server-sent events) while it runs.
   */
  async chat(text: string): Promise<{ status: "ok"; messageId: string; stream: ReadableStream<Uint8Array> } | { status: "rate_limited" }> {
    const message = z.string().trim().min(1).max(MAX_MESSAGE_CHARS).parse(text);
    if (!this.allow("chat")) return { status: "rate_limited" };
    const messageId = `web:${crypto.randomUUID()}`;
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
    const listener = writable.getWriter();
    this.#listeners.set(messageId, listener);
    const turn = this.saveMessages((messages) => [...messages, userMessage(messageId, message, { kind: "web", externalId: messageId })]);
    this.ctx.waitUntil(
      turn
        .catch((error: unknown) => logJson("error", { agent: this.userId, chat: describeError(error) }))
        .finally(async () => {
          this.#listeners.delete(messageId);
          await listener.write(SSE.encode("data: [DONE]\n\n")).catch(() => {});
          await listener.close().catch(() => {});
        }),
    );
    return { status: "ok", messageId, stream: readable };
  }

  /** Watchdog alarm: continues an inbox whose drain did not finish (eviction, crash). */
  async resumeInbox(): Promise<void> {
    await this.#kick();
  }

  /** Resolves once every stored input has been answered (tests and graceful shutdown). */
  async settle(): Promise<{ pending: number }> {
    await this.#kick();
    return { pending: this.#pendingCount() };
  }

  /** Counts one input on `channel` and says whether it is within the per-minute limit. */
  allow(channel: Channel): boolean {
    const now = Date.now();
    this.sql`delete from soma_rate where at < ${now - 60_000}`;
    const used = this.sql<{ n: number }>`select count(*) as n from soma_rate where channel = ${channel}`[0]?.n ?? 0;
    const limit = channel === "telegram" ? loadConfig(this.env).TELEGRAM_MESSAGES_PER_MINUTE : RATE_LIMITS[channel];
    if (used >= limit) return false;
    this.sql`insert into soma_rate (channel, at) values (${channel}, ${now})`;
    return true;
  }

  /** Clears the conversation (memory in Postgres stays). */
  async reset(): Promise<void> {
    // The same steps as the chat protocol's own "clear" (AIChatAgent keeps its transcript in the
    // default session of `this.sessions`), then every open client is told.
    this.resetTurnState();
    await this.sessions.session().clearMessages();
    this.messages = [];
    this.broadcast(JSON.stringify({ type: "cf_agent_chat_clear" }));
  }

  override async onChatMessage(_onFinish: unknown, options?: OnChatMessageOptions): Promise<Response> {
    return createUIMessageStreamResponse({ stream: this.#turnStream(options?.abortSignal) });
  }

  /** One turn over the conversation: the model with the memory tools, bounded in steps and time. */
  #turnStream(abortSignal: AbortSignal | undefined) {
    const config = loadConfig(this.env);
    const last = [...this.messages].reverse().find((m) => m.role === "user");
    const source: SourceRef = (last?.metadata as MessageSource | undefined)?.source ?? {
      kind: "web",
      externalId: last?.id ?? crypto.randomUUID(),
      payload: { text: last ? textOf(last) : "" },
    };
    const signal = AbortSignal.any([AbortSignal.timeout(this.turnBudgetMs), ...(abortSignal ? [abortSignal] : [])]);
    const window = this.messages.slice(-MODEL_WINDOW);

    const surface: Surface = source.kind === "telegram" ? "telegram" : "web";
    const tracer = (this.#tracer ??= createTracer(config));
    const started = Date.now();
    const telemetry = createTelemetry(config);
    // Telegram messages are counted at the webhook (commands included); web ones arrive here.
    if (surface === "web") telemetry.capture({ event: "message_received", userId: this.userId, properties: { surface } });
    let toolCalls = 0;
    const onActivity = (activity: MemoryActivity) => {
      if (activity.kind === "captured") telemetry.capture({ event: "memory_captured", userId: this.userId, properties: { type: activity.type, created: activity.created } });
      if (activity.kind === "recalled") telemetry.capture({ event: "memory_recalled", userId: this.userId, properties: { results: activity.results, typed: activity.typed } });
    };
    const trace = tracer.startTurn({ userId: this.userId, surface, input: last ? textOf(last) : "", messageId: source.externalId });

    const listener = this.#listeners.get(source.externalId);

    return createUIMessageStream({
      execute: async ({ writer }) => {
        // Every chunk goes to the chat protocol (and so to storage and WebSocket clients) and, for a
        // turn started by chat(), to its HTTP client as server-sent events.
        const emit = (chunk: UIMessageChunk) => {
          writer.write(chunk);
          void listener?.write(SSE.encode(`data: ${JSON.stringify(chunk)}\n\n`)).catch(() => {});
        };
        let failed = false;
        let output = "";
        try {
          const result = streamText({
            model: this.modelOverride ?? createChatModel(config, this.env),
            system: systemPrompt({ name: "", now: new Date(), timezone: "UTC" }),
            messages: await convertToModelMessages(window, { ignoreIncompleteToolCalls: true }),
            tools: memoryTools({
              db: this.#db(),
              userId: this.userId,
              embedder: createEmbedder(config, this.env),
              source,
              onActivity,
              scheduleReminder: ({ eventId, at }) =>
                emitEvents(config, reminderCreated.create({ userId: this.userId, eventId, at }, { id: `reminder-${eventId}` }), { agent: this.userId }),
            }),
            stopWhen: isStepCount(MAX_STEPS),
            abortSignal: signal,
            maxRetries: 1,
            onStepFinish: (step) => {
              toolCalls += step.toolResults.length;
              for (const call of step.toolResults) trace.tool(call.toolName, call.input, call.output);
            },
          });
          for await (const chunk of result.toUIMessageStream({ onError: describeError })) {
            if (chunk.type === "error") {
              failed = true;
              logJson("error", { agent: this.userId, turn: "model", error: chunk.errorText });
              continue;
            }
            if (chunk.type === "text-delta") output += chunk.delta;
            if (chunk.type !== "finish") emit(chunk);
          }
        } catch (error) {
          failed = true;
          logJson("error", { agent: this.userId, turn: "model", error: describeError(error) });
        }
        if (failed || signal.aborted) {
          const id = `apology-${crypto.randomUUID()}`;
          emit({ type: "text-start", id });
          emit({ type: "text-delta", id, delta: APOLOGY });
          emit({ type: "text-end", id });
          output = APOLOGY;
        }
        emit({ type: "finish" });
        trace.end({ output, failed: failed || signal.aborted });
        telemetry.log({ kind: "turn", userId: this.userId, surface, durationMs: Date.now() - started, failed: failed || signal.aborted, tools: toolCalls });
        this.ctx.waitUntil(telemetry.flush());
        // Background work on what the person said (fact-extract); never holds up or fails the turn.
        const input = last ? textOf(last) : "";
        if (input) {
          const event = turnCompleted.create(
            { userId: this.userId, surface, source: { kind: source.kind, externalId: source.externalId }, text: input },
            { id: `turn-${this.userId}-${source.externalId}` },
          );
          this.ctx.waitUntil(emitEvents(config, event, { agent: this.userId }));
        }
        this.ctx.waitUntil(tracer.flush().catch((error: unknown) => logJson("warn", { telemetry: "langfuse", error: describeError(error) })));
      },
    });
  }

  #kick(): Promise<void> {
    this.#draining ??= this.#drain().finally(() => {
      this.#draining = undefined;
    });
    return this.#draining;
  }

  async #drain(): Promise<void> {
    for (;;) {
      await this.#gathered();
      const [item] = this.sql<InboxRow>`select * from soma_inbox where state in ('pending', 'replied') order by sort_key, seq limit 1`;
      if (!item) break;
      let reply = item.reply;
      if (item.state === "pending") {
        // An input that cannot be answered (a command whose query fails, a database outage) gets the
        // apology: it must never stay at the head of the inbox and hold every later message back.
        reply = await this.#answer(item).catch((error: unknown) => {
          logJson("error", { agent: this.userId, inbox: item.id, answer: describeError(error) });
          return `${item.first_contact ? `${WELCOME}\n\n` : ""}${APOLOGY}`;
        });
        this.sql`update soma_inbox set state = 'replied', reply = ${reply} where id = ${item.id}`;
      }
      // At most once: once marked delivering, a crash never resends (a duplicate reply is worse than a
      // lost one the person can ask again for, and the conversation keeps the answer either way).
      this.sql`update soma_inbox set state = 'delivering' where id = ${item.id}`;
      try {
        await this.#sender().sendText(item.chat_id, reply ?? APOLOGY);
      } catch (error) {
        logJson("error", { agent: this.userId, inbox: item.id, delivery: describeError(error) });
      }
      this.sql`update soma_inbox set state = 'done' where id = ${item.id}`;
    }
    this.sql`delete from soma_inbox where state = 'done' and received_at < ${Date.now() - DEDUPE_RETENTION_MS}`;
  }

  /** Waits until no Telegram message has arrived for GATHER_QUIET_MS (at most GATHER_MAX_MS). */
  async #gathered(): Promise<void> {
    const deadline = Date.now() + GATHER_MAX_MS;
    for (;;) {
      const wait = Math.min(this.#lastArrival + GATHER_QUIET_MS, deadline) - Date.now();
      if (wait <= 0) return;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  /** The reply to an inbox item: a notice, a command's answer, or the model's turn (run once, even across restarts). */
  async #answer(item: InboxRow): Promise<string> {
    if (item.kind === "notice") return RATE_NOTICE;
    const welcome = item.first_contact ? `${WELCOME}\n\n` : "";
    if (!item.text.trim()) return `${welcome}${TEXT_ONLY}`;
    const command = await answerCommand(item.text, {
      db: this.#db(),
      userId: this.userId,
      appBaseUrl: loadConfig(this.env).APP_BASE_URL,
      reset: () => this.reset(),
    });
    if (command !== null) return command === WELCOME ? WELCOME : `${welcome}${command}`;
    return `${welcome}${await this.#turnReply(item)}`;
  }

  async #turnReply(item: InboxRow): Promise<string> {
    const messageId = item.id;
    const answered = this.#replyAfter(messageId);
    if (answered !== null) return answered;
    this.#showTyping(item.chat_id);
    const source = JSON.parse(item.source_ref) as SourceRef;
    const already = this.messages.some((m) => m.id === messageId);
    await this.saveMessages((messages) => (already ? [...messages] : [...messages, userMessage(messageId, item.text, source)]));
    // A turn that ended on tool calls alone has no text; Telegram refuses an empty message.
    return this.#replyAfter(messageId) || APOLOGY;
  }

  /** The assistant's text right after the user message `id`, or null if there is none yet. */
  #replyAfter(id: string): string | null {
    const index = this.messages.findIndex((m) => m.id === id);
    const next = index >= 0 ? this.messages[index + 1] : undefined;
    return next?.role === "assistant" ? textOf(next) : null;
  }

  #showTyping(chatId: number): void {
    try {
      void this.#sender().typing(chatId);
    } catch {
      // no bot configured: nothing to show
    }
  }

  #pendingCount(): number {
    return this.sql<{ n: number }>`select count(*) as n from soma_inbox where state in ('pending', 'replied')`[0]?.n ?? 0;
  }

  #db(): Database {
    this.#database ??= workerdDatabase(this.env.HYPERDRIVE.connectionString);
    return this.#database;
  }

  #sender(): TelegramSender {
    const config = loadConfig(this.env);
    if (!config.TELEGRAM_BOT_TOKEN) throw new Error("TELEGRAM_BOT_TOKEN is not set");
    this.#telegram ??= new TelegramSender(config.TELEGRAM_BOT_TOKEN, config.TELEGRAM_API_ROOT);
    return this.#telegram;
  }
}

/** A person's message in the conversation, with where it came from (the provenance of what it teaches). */
function userMessage(id: string, text: string, source: SourceRef): UIMessage {
  return { id, role: "user", parts: [{ type: "text", text }], metadata: { source: { ...source, payload: { text } } } satisfies MessageSource };
}

function textOf(message: UIMessage): string {
  return message.parts
    .map((part) => (part.type === "text" ? part.text : ""))
    .join("")
    .trim();
}
