// UserAgent: one Durable Object per person, named by users.id (worker/agent-routing.ts picks it; a client
// never does). It owns the person's conversation — one thread for Telegram and the web —, a durable inbox of
// Telegram messages (agents/inbox.ts: stored before they are acknowledged, answered one at a time in
// update_id order, exactly once, across restarts and outages; a turn's own steps: agents/telegram-turn.ts),
// the per-person rate limits (agents/rate-limit.ts), and in dev mode the deliveries no workflow engine took
// (agents/local-runs.ts), each in its own SQLite. Memory lives in Postgres, reached through Database.withUser.
import { AIChatAgent, type ChatRecoveryContext, type ChatRecoveryOptions, type OnChatMessageOptions } from "@cloudflare/ai-chat";
import type { Connection, WSMessage } from "agents";
import { createUIMessageStreamResponse, type LanguageModel } from "ai";
import { z } from "zod";
import type { Database } from "../db/database";
import { recall, type RecallQuery, type RecallResult } from "../db/repositories/recall";
import { workerdDatabase } from "../db/workerd-socket";
import { loadConfig, type Config } from "../platform/config";
import { describeError, logJson } from "../platform/log";
import { createChatModel, modelSeesImages } from "./integrations/model/chat-model";
import { createTranscriber } from "./integrations/model/transcription";
import type { DraftStream } from "./telegram-draft";
import type { InputDeps } from "./telegram-input";
import { type ConversationHost, forgetImages, keepWithApology, telegramTurnReply } from "./telegram-turn";
import { extrasOf } from "./telegram-message";
import { createEmbedder } from "./integrations/model/embeddings";
import { userMessage } from "./transcript";
import { ImportedConversation, type ExportMessage, type ImportMessage } from "../db/export-format";
import { appendImported, storedConversation } from "./conversation-transfer";
import { deadLetters } from "./dead-letters";
import { classifyFailure, type FailureKind } from "../platform/faults";
import { deadLetterOf, Inbox, isTelegramMessageId, STUCK_AFTER_MS, telegramItem } from "./inbox";
import type { DocumentReply, InboxItem, Reply } from "./inbox";
import { exportFile } from "./commands/export";
import { isDisconnected, noteDisconnected } from "./app-disconnects";
import type { TelegramInput } from "./inbox-policy";
import { chatRequest, cleanText, endOfRequest, MAX_MESSAGE_CHARS, RATE_NOTICE, screenFrame, webTurnMessage } from "./channels";
import type { ObjectSql } from "./object-sql";
import { ApiBudget, RateLimiter, rateLimitsFor, type RateVerdict } from "./rate-limit";
import { answerCommand, WELCOME } from "./commands/index";
import { telegramSenderFor, type TelegramSender } from "./integrations/telegram-sender";
import { createTracer, type Tracer } from "../platform/telemetry/tracer";
import { turnStream, TURN_BUDGET_MS } from "./turn/turn";
import { type LocalEvent, planLocalRun, runLocally } from "./local-runs";
import { importCommand, importDepsOf, importDocument, type TelegramImportDeps } from "./telegram-import";
import { keepName, nameless } from "./agent-name";

const SSE = new TextEncoder();

/** Storage key of an erased agent (account deleted): the only thing it keeps, so no channel revives it. */
const ERASED_KEY = "soma_erased_at";
const ERASE_RESET_DELAY_MS = 1000;

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
  /** The drafts of Telegram replies being written, by the message's external id (agents/telegram-draft.ts). */
  readonly #drafts = new Map<string, DraftStream>();
  /** Why a Telegram turn failed, by user message id: the inbox retries it or gives up on it. */
  readonly #turnFailures = new Map<string, unknown>();
  #inbox: Inbox | undefined;
  #rates: RateLimiter | undefined;
  #settings: Config | undefined;
  #database: Database | undefined;
  #telegram: TelegramSender | undefined;
  #tracer: Tracer | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // Every frame a client sends over the web socket is screened before the chat protocol sees it.
    const protocol = this.onMessage.bind(this);
    this.onMessage = (connection, frame) => this.#onFrame(connection, frame, protocol);
  }

  override async onStart(): Promise<void> {
    await keepName(this.ctx); // agents/agent-name.ts: an alarm may wake this object without its name
    if (this.#getInbox().pendingCount() > 0) await this.#getInbox().watchdog();
  }

  /** An object woken by an alarm without any way to learn its name cannot serve anyone: reset it, so
   * the next request (which carries the name) gets a healthy instance instead of this one. */
  override async alarm(): Promise<void> {
    if (await nameless(this.ctx)) {
      logJson("error", { agent: this.ctx.id.toString(), alarm: "woken without a name; resetting the object until a named request" });
      this.ctx.abort("woken without a name");
    }
    return super.alarm();
  }

  /** The inbox owns Telegram turns: after a restart it runs them again itself (the SDK must not too). */
  override async onChatRecovery(context: ChatRecoveryContext): Promise<ChatRecoveryOptions> {
    const last = [...context.messages].reverse().find((m) => m.role === "user");
    return last && isTelegramMessageId(last.id) ? { persist: false, continue: false } : {};
  }

  /** The person this agent belongs to. */
  get userId(): string {
    return this.name;
  }

  /** Stores a Telegram message and returns at once; the reply is sent by the inbox drain. `duplicate` when this
   * update was seen before, `rate_limited` when the person is over the limit. */
  async enqueueTelegramMessage(input: TelegramInput): Promise<{ status: "queued" | "duplicate" | "rate_limited" | "erased" }> {
    if (await this.#erased()) return { status: "erased" };
    const item = telegramItem(input);
    const inbox = this.#getInbox();
    const rates = this.#rateLimiter();
    // Over the limit the update is still recorded (so a redelivery stays a duplicate) and answered with
    // one notice a minute at most; the model never sees it.
    // A voice note or photo also spends the media budget: each one costs a download and a model call.
    const budgets = extrasOf(item.extras).attachment ? (["telegram", "chat", "media"] as const) : (["telegram", "chat"] as const);
    const kind = inbox.store(item, () => {
      if (rates.allow(...budgets)) return "message";
      return rates.allow("telegram-notice") ? "notice" : "dropped";
    });
    if (kind === null) return { status: "duplicate" };
    if (kind === "dropped") return { status: "rate_limited" };
    await inbox.watchdog();
    return { status: kind === "notice" ? "rate_limited" : "queued" };
  }

  /**
   * One chat turn for an API client, in the same conversation and turn queue as every other channel,
   * streamed as the AI SDK UI message stream (server-sent events) while it runs.
   */
  async chat(
    text: string,
  ): Promise<{ status: "ok"; messageId: string; stream: ReadableStream<Uint8Array> } | { status: "rate_limited" } | { status: "erased" }> {
    const message = cleanText(z.string().trim().min(1).max(MAX_MESSAGE_CHARS).parse(text));
    if (await this.#erased()) return { status: "erased" };
    if (!this.#rateLimiter().allow("chat")) return { status: "rate_limited" };
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

  /** Counts one web API request against the person's `budget` (agents/rate-limit.ts), unless over it. An
   * erased agent counts nothing (no channel writes to it again); the route then finds the account gone. */
  async spend(budget: ApiBudget): Promise<RateVerdict> {
    return (await this.#erased()) ? { ok: true } : this.#rateLimiter().take(ApiBudget.parse(budget));
  }
  /** Disconnects the MCP grant `grantId`: refused from now on, wherever its calls land (admitApp). */
  async disconnectApp(grantId: string): Promise<void> {
    await noteDisconnected(this.ctx.storage, grantId);
  }
  /** One MCP request of `grantId`: "disconnected" (agents/app-disconnects.ts, or the account deleted), else spent as spend does. */
  async admitApp(grantId: string, ...budgets: ApiBudget[]): Promise<RateVerdict | "disconnected"> {
    if ((await this.#erased()) || (await isDisconnected(this.ctx.storage, grantId))) return "disconnected";
    return this.#rateLimiter().take(...budgets.map((b) => ApiBudget.parse(b)));
  }
  /** An app's search (MCP's search_memory, admitted by admitApp) on this agent's pool, open between calls (bench:mcp). */
  async recallForApp(query: RecallQuery): Promise<RecallResult[]> {
    return (await this.#erased()) ? [] : recall(this.#db(), this.userId, query);
  }

  /** Watchdog alarm: resumes (or replaces a stuck) inbox drain, and stays armed while work is pending. */
  async resumeInbox(): Promise<void> {
    await this.#getInbox().watchdog();
  }

  /** A delivery no workflow engine took (dev mode without a dev server) runs here at its time (agents/local-runs.ts). */
  async runHere(event: LocalEvent): Promise<void> {
    await planLocalRun(this, event);
  }
  /** The schedule callback of a local run: resumed from its kept steps, retried when it fails. */
  async localRun(event: LocalEvent): Promise<void> {
    await runLocally(this, this.env, this.#db(), event);
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

  /**
   * Account deletion: the conversation, inbox, schedules and every other stored byte go, and the
   * object resets. One marker stays, so that no channel brings the person's agent back with a message's
   * text (a webhook redelivery, a sender another isolate still has cached): it refuses every input.
   */
  async eraseAll(): Promise<void> {
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    await this.ctx.storage.put(ERASED_KEY, Date.now());
    await this.ctx.storage.sync();
    this.messages = [];
    for (const connection of this.getConnections()) connection.close(4410, "account deleted");
    // A turn still running finds its tables gone and writes nothing. The object then resets (after
    // this call has been answered: a reset while its response waits would fail the caller).
    setTimeout(() => this.ctx.abort("the account was deleted"), ERASE_RESET_DELAY_MS);
  }

  async #erased(): Promise<boolean> {
    return (await this.ctx.storage.get(ERASED_KEY)) !== undefined;
  }

  /** One frame from a web socket client: only a chat request's newest message, within the limits. */
  async #onFrame(
    connection: Connection,
    frame: WSMessage,
    protocol: (connection: Connection, frame: WSMessage) => void | Promise<void>,
  ): Promise<void> {
    const verdict = screenFrame(frame as string | ArrayBuffer, (id) => this.messages.some((m) => m.id === id));
    if (verdict.kind === "pass") return protocol(connection, frame);
    if (verdict.kind === "ignore") {
      logJson("warn", { agent: this.userId, socket: "frame ignored", reason: verdict.reason });
      return;
    }
    if (verdict.kind === "done") return connection.send(endOfRequest(verdict.requestId));
    if (verdict.kind === "refuse") return connection.send(endOfRequest(verdict.requestId, verdict.notice));
    if (await this.#erased()) return connection.close(4410, "account deleted");
    const message = webTurnMessage(verdict, modelSeesImages(this.#config));
    if (typeof message === "string") return connection.send(endOfRequest(verdict.requestId, message));
    // An image also spends the media budget, as a Telegram photo does.
    if (!this.#rateLimiter().allow(...(verdict.image ? (["chat", "media"] as const) : (["chat"] as const))))
      return connection.send(endOfRequest(verdict.requestId, RATE_NOTICE));
    // The conversation as the agent has it, plus the new message: nothing else of the client's frame.
    return protocol(connection, chatRequest(verdict.requestId, [...this.messages, message]));
  }

  /** A web turn's image leaves the conversation once answered, as a Telegram photo's does (#turnReply,
   * which also owns a Telegram turn's images: a failed one is retried with its photo). */
  protected override async onChatResponse(): Promise<void> {
    const last = [...this.messages].reverse().find((m) => m.role === "user");
    if (last && !isTelegramMessageId(last.id)) await forgetImages(this.#conversationHost());
  }

  /** The whole conversation as stored, oldest first, with dates: the export's `conversation` as JSON (GET /api/export;
   * free-form message metadata cannot cross RPC's types, so the caller parses it with ExportedConversation). */
  async transcript(): Promise<string> {
    return JSON.stringify(await this.#conversation());
  }

  #conversation(): Promise<ExportMessage[]> {
    // The SDK stores each message's time (ms) but leaves it out of the history it returns.
    const times = () => this.sql<{ id: string; created_at: number }>`select id, created_at from cf_agents_session_messages`;
    return storedConversation(this.sessions.session(), () => new Map(times().map((t) => [t.id, t.created_at])));
  }

  /** Adds the words of an export's conversation after this agent's, each once (agents/conversation-transfer.ts). */
  async importConversation(file: ImportMessage[], exportedAt: string): Promise<{ status: "ok"; added: number } | { status: "erased" }> {
    const messages = ImportedConversation.parse(file);
    if (await this.#erased()) return { status: "erased" };
    const incoming = await appendImported(this.sessions.session(), messages, exportedAt, this.maxPersistedMessages);
    if (incoming.length > 0) {
      // An import is not a change the SDK mirrors into `messages`: add them, and tell open clients.
      this.messages = [...this.messages, ...incoming];
      this.broadcast(JSON.stringify({ type: "cf_agent_chat_messages", messages: this.messages }));
    }
    return { status: "ok", added: incoming.length };
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
    const config = this.#config;
    const stream = turnStream({
      userId: this.userId,
      config,
      messages: this.messages,
      model: this.modelOverride ?? createChatModel(config, this.env),
      embedder: createEmbedder(config, this.env),
      db: this.#db(),
      tracer: this.#tracerFor(config),
      budgetMs: this.turnBudgetMs,
      abortSignal: options?.abortSignal,
      listener: (externalId) => this.#listeners.get(externalId),
      observer: (externalId) => this.#drafts.get(externalId),
      failed: (messageId, failure) => this.#turnFailures.set(messageId, failure),
      present: () => !this.getConnections()[Symbol.iterator]().next().done,
      waitUntil: (work) => this.ctx.waitUntil(work),
      runHere: (event) => this.runHere(event),
    });
    return createUIMessageStreamResponse({ stream });
  }

  #getInbox(): Inbox {
    this.#inbox ??= new Inbox({
      sql: this.#objectSql(),
      answer: (item, signal) => this.#answer(item, signal),
      send: (chatId, text, button) => this.#sender().sendText(chatId, text, button),
      sendMarkdown: (chatId, markdown) => this.#sender().sendMarkdown(chatId, markdown),
      sendDocument: (chatId, document, caption) => this.#sendDocument(chatId, document, caption),
      typing: (chatId) => this.#showTyping(chatId),
      wakeAt: (at) => this.#wakeAt(at),
      classify: (error) => this.#classify(error),
      setAside: (item, outcome, error) => this.#setAside(item, outcome, error),
      welcome: WELCOME,
      retryWindowMs: () => this.retryWindowMs ?? this.#config.INBOX_RETRY_WINDOW_SECONDS * 1000,
      stuckAfterMs: () => this.stuckAfterMs,
      log: (level, fields) => logJson(level, { agent: this.userId, ...fields }),
    });
    return this.#inbox;
  }

  #rateLimiter(): RateLimiter {
    this.#rates ??= new RateLimiter(this.#objectSql(), rateLimitsFor(this.#config));
    return this.#rates;
  }

  #objectSql(): ObjectSql {
    return this.sql.bind(this) as ObjectSql;
  }

  /** The reply to an inbox message: a command's answer, or the model's turn. Throws when it cannot be answered now. */
  async #answer(item: InboxItem, signal: AbortSignal): Promise<Reply> {
    const command = await answerCommand(item.text, {
      db: this.#db(),
      userId: this.userId,
      appBaseUrl: this.#config.APP_BASE_URL,
      reset: () => this.reset(),
      importPasted: (text) => importCommand(this.#importDeps(), text),
    });
    return command ?? telegramTurnReply(this.#conversationHost(), item, signal);
  }

  /** The conversation as a Telegram turn uses it (agents/telegram-turn.ts). */
  #conversationHost(): ConversationHost {
    return {
      messages: () => this.messages,
      saveMessages: (update, options) => this.saveMessages(update, options),
      persistMessages: (messages) => this.persistMessages(messages),
      dropMessages: (ids) => this.#dropMessages(ids),
      takeFailure: (messageId) => {
        const failure = this.#turnFailures.get(messageId);
        this.#turnFailures.delete(messageId);
        return failure;
      },
      drafts: this.#drafts,
      sender: () => this.#sender(),
      typing: (chatId) => this.#showTyping(chatId),
      inputDeps: (item) => this.#inputDeps(item),
    };
  }

  /** The agent's tracer, made once. */
  #tracerFor(config: Config): Tracer {
    this.#tracer ??= createTracer(config);
    return this.#tracer;
  }

  /** A command's document, rendered as it is sent: /export's file holds the memory as it is now. */
  async #sendDocument(chatId: number, _document: DocumentReply, caption: string): Promise<void> {
    const file = await exportFile(this.#db(), this.userId, await this.#conversation());
    await this.#sender().sendDocument(chatId, { name: file.name, bytes: file.bytes }, caption);
  }

  /** What reading a Telegram message needs: its files, the speech model, whether the model sees images. */
  #inputDeps(item: InboxItem): InputDeps {
    const config = this.#config;
    return {
      download: (fileId: string, maxBytes: number, signal: AbortSignal) => this.#sender().downloadFile(fileId, maxBytes, signal),
      importFile: (file, signal) => importDocument(this.#importDeps(), file, signal),
      transcriber: createTranscriber(config, this.env),
      seesImages: modelSeesImages(config),
      voiceMaxSeconds: config.VOICE_MAX_SECONDS,
      rewrite: (text: string, extras: Parameters<Inbox["rewrite"]>[2]) => this.#getInbox().rewrite(item.id, text, extras),
    };
  }

  /** What an import sent to the bot needs: the database, the file, and the background to read it in. */
  #importDeps(): TelegramImportDeps {
    const download = (fileId: string, maxBytes: number, signal: AbortSignal) => this.#sender().downloadFile(fileId, maxBytes, signal);
    return importDepsOf({ db: this.#db(), userId: this.userId, config: this.#config, download, runHere: (event) => this.runHere(event) });
  }

  async #dropMessages(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.sessions.session().deleteMessages(ids);
    this.messages = this.messages.filter((m) => !ids.includes(m.id));
  }

  /** The inbox gave up on an item: kept in the conversation with the apology, and a dead letter for operators. */
  async #setAside(item: InboxItem, outcome: "failed" | "dead", error: string): Promise<void> {
    await keepWithApology(this.#conversationHost(), item);
    if (outcome === "dead") await deadLetters(this.env).add(deadLetterOf(this.userId, item, error));
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

  /** "typing…" in the chat (nothing without a bot). */
  #showTyping(chatId: number): void {
    if (this.#config.TELEGRAM_BOT_TOKEN) void this.#sender().typing(chatId);
  }

  /** The configuration, read from the bindings once. */
  get #config(): Config {
    this.#settings ??= loadConfig(this.env);
    return this.#settings;
  }

  #db(): Database {
    this.#database ??= workerdDatabase(this.env.HYPERDRIVE.connectionString);
    return this.#database;
  }

  #sender(): TelegramSender {
    this.#telegram ??= telegramSenderFor(this.#config) ?? undefined;
    if (!this.#telegram) throw new Error("TELEGRAM_BOT_TOKEN is not set");
    return this.#telegram;
  }
}
