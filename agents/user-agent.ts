// UserAgent: one Durable Object per person, named by users.id (worker/agent-routing.ts picks it; a
// client never does). It owns the person's conversation — one thread for Telegram and the web —, a
// durable inbox of channel messages with processed-id dedupe, and per-channel rate limits. Memory
// lives in Postgres and is reached only through Database.withUser with this agent's name.
//
// Telegram messages go through the durable inbox (agents/inbox.ts): stored before they are
// acknowledged, answered one at a time in update_id order, exactly once, across restarts and outages.
import { AIChatAgent, type ChatRecoveryContext, type ChatRecoveryOptions, type OnChatMessageOptions } from "@cloudflare/ai-chat";
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
import { replyAfter, replyIds, textOf, userMessage, type MessageSource } from "./transcript";
import { deadLetters } from "./dead-letters";
import { classifyFailure, type FailureKind } from "./faults";
import { Inbox, STUCK_AFTER_MS, type InboxItem } from "./inbox";
import { APOLOGY, MAX_TELEGRAM_TEXT_CHARS, RATE_NOTICE, TelegramInput, TEXT_ONLY } from "./inbox-policy";
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
/** Where the agents SDK looks for an object's name when the runtime does not give it (see onStart). */
const NAME_KEY = "__ps_name";

const SSE = new TextEncoder();

/** Errors of a tool call the model got wrong: reported to the model, never a failed turn. */
const MODEL_MISTAKES = new Set(["AI_InvalidToolInputError", "AI_NoSuchToolError", "AI_ToolCallRepairError"]);

export { APOLOGY, MAX_TELEGRAM_TEXT_CHARS, RATE_NOTICE, TelegramInput, TEXT_ONLY };

/** Per-minute limits per person (Telegram's is configurable: TELEGRAM_MESSAGES_PER_MINUTE). */
export const RATE_LIMITS = { telegram: 10, chat: 20, "telegram-notice": 1 } as const satisfies Record<string, number>;
export type Channel = keyof typeof RATE_LIMITS;

/** Longest message a person may send through any door. */
export const MAX_MESSAGE_CHARS = 8000;


export class UserAgent extends AIChatAgent<Env> {
  // The instance name is the person's own id, sent only to their own authenticated socket.
  static override options = { sendIdentityOnConnect: true };
  override maxPersistedMessages = 500;
  /** Replaces the configured model; tests set it through runInDurableObject with a scripted model. */
  modelOverride: LanguageModel | undefined;
  /** The whole-turn budget; tests shorten it to exercise the timeout path. */
  turnBudgetMs = TURN_BUDGET_MS;
  /** How long an outage is waited out (INBOX_RETRY_WINDOW_SECONDS); tests shorten it. */
  retryWindowMs: number | undefined;
  /** After how long without progress the watchdog replaces a drain; tests shorten it. */
  stuckAfterMs = STUCK_AFTER_MS;
  /** HTTP clients of `chat()` waiting for the chunks of their turn, by user message id. */
  readonly #listeners = new Map<string, WritableStreamDefaultWriter<Uint8Array>>();
  /** Why a Telegram turn failed, by user message id: the inbox retries it or gives up on it. */
  readonly #turnFailures = new Map<string, unknown>();
  #inbox: Inbox | undefined;
  #database: Database | undefined;
  #telegram: TelegramSender | undefined;
  #tracer: Tracer | undefined;

  override async onStart(): Promise<void> {
    // An alarm can wake this object without its name: wrangler dev's workerd keeps an alarm by object
    // id alone, so after a restart `ctx.id.name` is missing and the SDK refuses to start the object
    // (every later request to it failed too, while the failing alarm kept it alive). The SDK falls back
    // to this storage key; writing it once, whenever the name is known, makes every wake find it.
    const name = this.ctx.id.name;
    if (name !== undefined && (await this.ctx.storage.get(NAME_KEY)) !== name) await this.ctx.storage.put(NAME_KEY, name);
    this.sql`create table if not exists soma_rate (channel text not null, at integer not null)`;
    this.sql`create index if not exists soma_rate_channel_at on soma_rate (channel, at)`;
    if (this.#getInbox().pendingCount() > 0) await this.#getInbox().watchdog();
  }

  /** An object woken by an alarm without any way to learn its name cannot serve anyone: reset it, so
   * the next request (which carries the name) gets a healthy instance instead of this one. */
  override async alarm(): Promise<void> {
    if (this.ctx.id.name === undefined && (await this.ctx.storage.get(NAME_KEY)) === undefined) {
      logJson("error", { agent: this.ctx.id.toString(), alarm: "woken without a name; resetting the object until a named request" });
      this.ctx.abort("woken without a name");
    }
    return super.alarm();
  }

  /** The inbox owns Telegram turns: after a restart it runs them again itself (the SDK must not too). */
  override async onChatRecovery(context: ChatRecoveryContext): Promise<ChatRecoveryOptions> {
    const last = [...context.messages].reverse().find((m) => m.role === "user");
    return last?.id.startsWith("telegram:") ? { persist: false, continue: false } : {};
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
    const inbox = this.#getInbox();
    const id = `telegram:${message.updateId}`;
    const sourceRef = JSON.stringify({ kind: "telegram", externalId: `${message.chatId}:${message.messageId}` } satisfies SourceRef);
    // Over the limit the update is still recorded (so a redelivery stays a duplicate) and answered with
    // one notice a minute at most; the model never sees it.
    const kind = inbox.store(
      { id, sortKey: message.updateId, firstContact: message.firstContact, chatId: message.chatId, text: message.text, sourceRef },
      () => (this.allow("telegram") ? "message" : this.allow("telegram-notice") ? "notice" : "dropped"),
    );
    if (kind === null) return { status: "duplicate" };
    if (kind === "dropped") return { status: "rate_limited" };
    await inbox.watchdog();
    return { status: kind === "notice" ? "rate_limited" : "queued" };
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

  /** Watchdog alarm: resumes (or replaces a stuck) inbox drain, and stays armed while work is pending. */
  async resumeInbox(): Promise<void> {
    await this.#getInbox().watchdog();
  }

  /** Resolves once every stored input has been answered or is waiting for a retry (tests, operators). */
  async settle(): Promise<{ pending: number }> {
    await this.#getInbox().kick();
    return { pending: this.#getInbox().pendingCount() };
  }

  /** Whether the inbox is being drained, since when without progress, and what is pending (operators, tests). */
  inboxStatus(): { draining: boolean; lastProgressMs: number | null; pending: number } {
    return this.#getInbox().status();
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
    // A tool that finds a dependency down ends the turn at once: it is retried whole later.
    const outage = new AbortController();
    const signal = AbortSignal.any([AbortSignal.timeout(this.turnBudgetMs), outage.signal, ...(abortSignal ? [abortSignal] : [])]);
    // A Telegram turn that fails is the inbox's to retry or give up on; a web turn apologises at once.
    const inboxTurn = last?.id.startsWith("telegram:") ?? false;
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
        let failure: unknown;
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
              for (const part of step.content) {
                if (part.type === "tool-error" && classifyFailure(part.error) === "transient") {
                  failure ??= part.error;
                  outage.abort(part.error);
                }
              }
            },
          });
          const onError = (error: unknown) => {
            // A malformed tool call is the model's mistake, answered to the model as a tool error; it
            // does not fail the turn.
            if (!MODEL_MISTAKES.has((error as Error | undefined)?.name ?? "")) failure ??= error;
            return describeError(error);
          };
          for await (const chunk of result.toUIMessageStream({ onError })) {
            if (chunk.type === "error") {
              logJson("error", { agent: this.userId, turn: "model", error: chunk.errorText });
              continue;
            }
            if (chunk.type === "text-delta") output += chunk.delta;
            if (chunk.type !== "finish") emit(chunk);
          }
        } catch (error) {
          failure ??= error;
          logJson("error", { agent: this.userId, turn: "model", error: describeError(error) });
        }
        if (signal.aborted) failure ??= signal.reason ?? new DOMException("the turn ran out of time", "TimeoutError");
        const failed = failure !== undefined;
        if (failed && inboxTurn && last) {
          this.#turnFailures.set(last.id, failure);
        } else if (failed) {
          const id = `apology-${crypto.randomUUID()}`;
          emit({ type: "text-start", id });
          emit({ type: "text-delta", id, delta: APOLOGY });
          emit({ type: "text-end", id });
          output = APOLOGY;
        }
        emit({ type: "finish" });
        trace.end({ output, failed });
        telemetry.log({ kind: "turn", userId: this.userId, surface, durationMs: Date.now() - started, failed, tools: toolCalls });
        this.ctx.waitUntil(telemetry.flush());
        // Background work on what the person said (fact-extract); never holds up or fails the turn.
        const input = last ? textOf(last) : "";
        if (input && !(failed && inboxTurn)) {
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

  #getInbox(): Inbox {
    this.#inbox ??= new Inbox({
      sql: this.sql.bind(this) as ConstructorParameters<typeof Inbox>[0]["sql"],
      answer: (item, signal) => this.#answer(item, signal),
      send: (chatId, text) => this.#sender().sendText(chatId, text),
      typing: (chatId) => this.#showTyping(chatId),
      wakeAt: (at) => this.#wakeAt(at),
      classify: (error) => this.#classify(error),
      setAside: (item, outcome, error) => this.#setAside(item, outcome, error),
      welcome: WELCOME,
      retryWindowMs: () => this.retryWindowMs ?? loadConfig(this.env).INBOX_RETRY_WINDOW_SECONDS * 1000,
      stuckAfterMs: () => this.stuckAfterMs,
      log: (level, fields) => logJson(level, { agent: this.userId, ...fields }),
    });
    return this.#inbox;
  }

  /** The reply to an inbox item: a notice, a command's answer, or the model's turn. Throws when it cannot be answered now. */
  async #answer(item: InboxItem, signal: AbortSignal): Promise<string> {
    if (item.kind === "notice") return RATE_NOTICE;
    if (item.kind === "welcome") return WELCOME;
    if (!item.text.trim()) return TEXT_ONLY;
    const command = await answerCommand(item.text, {
      db: this.#db(),
      userId: this.userId,
      appBaseUrl: loadConfig(this.env).APP_BASE_URL,
      reset: () => this.reset(),
    });
    return command ?? this.#turnReply(item, signal);
  }

  async #turnReply(item: InboxItem, signal: AbortSignal): Promise<string> {
    const messageId = item.id;
    // A turn that completed before the agent stopped is not run again.
    const answered = replyAfter(this.messages, messageId);
    if (answered !== null) return answered || APOLOGY;
    this.#showTyping(item.chat_id);
    const source = JSON.parse(item.source_ref) as SourceRef;
    // A re-run after the person wrote elsewhere meanwhile: their message moves to the end, so that the
    // turn answers it (a turn answers the newest user message).
    const lastUser = [...this.messages].reverse().find((m) => m.role === "user");
    if (lastUser && lastUser.id !== messageId && this.messages.some((m) => m.id === messageId)) await this.#dropMessages([messageId]);
    const present = this.messages.some((m) => m.id === messageId);
    const result = await this.saveMessages((messages) => (present ? [...messages] : [...messages, userMessage(messageId, item.text, source)]), { signal });
    const failure = this.#turnFailures.get(messageId);
    this.#turnFailures.delete(messageId);
    if (failure !== undefined || result.status !== "completed") {
      // What the failed attempt said is not the answer: the next attempt starts from the message again.
      await this.#dropReplyTo(messageId);
      throw failure ?? (result.status === "error" ? new Error(result.error ?? "the turn failed") : new DOMException(`the turn was ${result.status}`, "AbortError"));
    }
    // A turn that ended on tool calls alone has no text; Telegram refuses an empty message.
    return replyAfter(this.messages, messageId) || APOLOGY;
  }

  /** Removes the assistant messages that follow the user message `id`. */
  async #dropReplyTo(id: string): Promise<void> {
    await this.#dropMessages(replyIds(this.messages, id));
  }

  async #dropMessages(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.sessions.session().deleteMessages(ids);
    this.messages = this.messages.filter((m) => !ids.includes(m.id));
  }

  /**
   * The inbox gave up on an item: the person's message stays in the conversation with the apology
   * after it (they see it in the web app), and a dead letter is recorded for operators.
   */
  async #setAside(item: InboxItem, outcome: "failed" | "dead", error: string): Promise<void> {
    if (item.kind === "message" && item.text.trim()) {
      await this.#dropReplyTo(item.id);
      const source = JSON.parse(item.source_ref) as SourceRef;
      const present = this.messages.some((m) => m.id === item.id);
      const apology: UIMessage = { id: `apology-${item.id}`, role: "assistant", parts: [{ type: "text", text: APOLOGY }] };
      await this.persistMessages([...this.messages.filter((m) => m.id !== apology.id), ...(present ? [] : [userMessage(item.id, item.text, source)]), apology]);
    }
    if (outcome === "dead") {
      await deadLetters(this.env).add({
        key: `${this.userId}:${item.id}`,
        personId: this.userId,
        updateId: Number(item.id.split(":")[1]) || null,
        chatId: item.chat_id,
        text: item.text,
        error,
        attempts: item.attempts,
      });
    }
  }

  /** Keeps one watchdog schedule, no later than `at`. */
  async #wakeAt(at: number): Promise<void> {
    const watchdogs = (await this.listSchedules()).filter((s) => s.callback === "resumeInbox");
    if (watchdogs.some((s) => s.time * 1000 <= at)) return;
    for (const schedule of watchdogs) await this.cancelSchedule(schedule.id);
    await this.schedule(new Date(at), "resumeInbox");
  }

  /** Transient or permanent; an error of unknown kind counts as an outage when Postgres is unreachable. */
  async #classify(error: unknown): Promise<FailureKind> {
    const kind = classifyFailure(error);
    if (kind === "transient") return kind;
    return (await this.#db().ping(2000)) ? "permanent" : "transient";
  }

  #showTyping(chatId: number): void {
    try {
      void this.#sender().typing(chatId);
    } catch {
      // no bot configured: nothing to show
    }
  }

  #db(): Database {
    this.#database ??= workerdDatabase(this.env.HYPERDRIVE.connectionString);
    return this.#database;
  }

  #sender(): TelegramSender {
    const config = loadConfig(this.env);
    if (!config.TELEGRAM_BOT_TOKEN) throw new Error("TELEGRAM_BOT_TOKEN is not set");
    this.#telegram ??= new TelegramSender(config.TELEGRAM_BOT_TOKEN, config.TELEGRAM_API_ROOT, { timeoutSeconds: config.TELEGRAM_API_TIMEOUT_SECONDS });
    return this.#telegram;
  }
}
