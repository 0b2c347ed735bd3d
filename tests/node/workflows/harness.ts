// The workflow functions as the Worker builds them, but in Node: the real repositories on the test
// Postgres (through Database.withUser / withSystem), the offline model (or a scripted one), the local
// embedder (or a failing one), Telegram, Gmail, Google OAuth and Langfuse as loopback stand-ins (tests/setup/).
import { InngestTestEngine } from "@inngest/test";
import type { LanguageModel } from "ai";
import { inject } from "vitest";
import { loadConfig, type Config } from "../../../platform/config";
import { localEmbedder, type Embedder } from "../../../agents/integrations/model/embeddings";
import { OfflineModel } from "../../../agents/integrations/model/offline-model";
import { TelegramSender } from "../../../agents/integrations/telegram-sender";
import { createTracer } from "../../../platform/telemetry/tracer";
import { createWorkflows } from "../../../agents/workflows";
import type { WorkflowDeps } from "../../../agents/workflows/deps";
import { Database } from "../../../db/database";
import { createPerson, type Person } from "../../../db/repositories/auth";
import { saveConnection } from "../../../db/repositories/connections";
import { TokenCipher } from "../../../db/token-cipher";

export const standInUrl = inject("standInUrl");
export const TOKEN_KEY = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
export const BOT_TOKEN = "123456:test-token";

let database: Database | undefined;
/** The application's Database on the test Postgres (one pool for the whole file). */
export function testDb(): Database {
  database ??= new Database(inject("databaseUrl"), { max: 4 });
  return database;
}

/** The settings the functions run with (a Worker's bindings, as strings). */
export const testSettings = {
  ENVIRONMENT: "test",
  AI_PROVIDER: "offline",
  EMBEDDING_PROVIDER: "local",
  TELEGRAM_BOT_TOKEN: BOT_TOKEN,
  TELEGRAM_API_ROOT: standInUrl,
  TOKEN_ENCRYPTION_KEY: TOKEN_KEY,
  GOOGLE_CLIENT_ID: "google-client-id",
  GOOGLE_CLIENT_SECRET: "google-client-secret",
  GOOGLE_TOKEN_URL: `${standInUrl}/google/token`,
  GMAIL_API_URL: standInUrl,
  GMAIL_PUBSUB_TOPIC: "projects/soma-test/topics/gmail",
  LANGFUSE_PUBLIC_KEY: "pk-lf-workflows",
  LANGFUSE_SECRET_KEY: "sk-lf-workflows",
  LANGFUSE_BASE_URL: standInUrl,
};
export const testConfig = loadConfig(testSettings);

/** The eight functions around test dependencies; `now`, `model`, `telegram`, `embedder` and `config` can be replaced per test. */
export function testWorkflows(
  overrides: { now?: Date; model?: LanguageModel; telegram?: TelegramSender | null; embedder?: Embedder; config?: Config } = {},
) {
  const deps: WorkflowDeps = {
    config: overrides.config ?? testConfig,
    db: testDb(),
    embedder: overrides.embedder ?? localEmbedder,
    model: overrides.model ?? new OfflineModel(),
    tracer: createTracer(testConfig),
    telegram: overrides.telegram === undefined ? new TelegramSender(BOT_TOKEN, standInUrl, { sleep: async () => {} }) : overrides.telegram,
    now: () => overrides.now ?? new Date(),
  };
  return { deps, ...createWorkflows(deps) };
}

let nextChat = 7_000_000_000 + Math.floor(Math.random() * 1e8);
/** A new person; with `telegram: true` they have a chat id (returned) the Bot API stand-in records. */
export async function newPerson(options: { telegram?: boolean; timezone?: string } = {}): Promise<Person & { chatId: number | null }> {
  const chatId = options.telegram ? ++nextChat : null;
  const person = await createPerson(testDb(), {
    displayName: `Wf Person ${crypto.randomUUID().slice(0, 6)}`,
    ...(chatId ? { telegramUserId: chatId, telegramChatId: chatId } : {}),
    ...(options.timezone ? { timezone: options.timezone } : {}),
  });
  return { ...person, chatId };
}

/** Where `userId`'s Google token of `column` is sealed for (db/token-cipher.ts binds it to that place). */
export function tokenSlot(userId: string, column: "access_token" | "refresh_token") {
  return { userId, provider: "google", column } as const;
}

/** Connects `userId`'s Gmail as Google account `sub` (tokens sealed as the OAuth callback seals them). */
export async function connectGmail(
  userId: string,
  sub: string,
  options: { accessExpiresAt?: Date; refreshToken?: string | null; historyId?: string } = {},
) {
  const cipher = new TokenCipher(TOKEN_KEY);
  const refresh = options.refreshToken === undefined ? `1//refresh-${sub}` : options.refreshToken;
  await testDb().withUser(userId, async (tx) => {
    await saveConnection(tx, userId, {
      provider: "google",
      accountEmail: `${sub}@gmail.example`,
      scope: "openid email profile https://www.googleapis.com/auth/gmail.readonly",
      accessTokenEnc: await cipher.encrypt(`ya29.access-${sub}`, tokenSlot(userId, "access_token")),
      refreshTokenEnc: refresh ? await cipher.encrypt(refresh, tokenSlot(userId, "refresh_token")) : null,
      accessTokenExpiresAt: options.accessExpiresAt ?? new Date(Date.now() + 3_600_000),
    });
  });
  if (options.historyId) {
    const { saveMailState } = await import("../../../db/repositories/connections");
    await testDb().withUser(userId, (tx) => saveMailState(tx, { historyId: options.historyId }));
  }
}

/** Sets up (or adds to) the Gmail stand-in's mailbox of account `sub`; returns its current history id. */
export async function gmailMailbox(setup: {
  sub: string;
  historyId?: number;
  oldestHistoryId?: number;
  messages?: Array<{ id: string; from: string; subject: string; snippet?: string; internalDate?: number }>;
  rejectTokens?: string[];
  fail?: { status: number; times: number };
}): Promise<string> {
  const response = await fetch(`${standInUrl}/__gmail/mailbox`, { method: "POST", body: JSON.stringify(setup) });
  return ((await response.json()) as { historyId: string }).historyId;
}

/** Gmail API requests the stand-in received for account `sub`. */
export async function gmailRequests(sub: string): Promise<Array<{ method: string; path: string; token: string }>> {
  return (await (await fetch(`${standInUrl}/__gmail/requests?sub=${encodeURIComponent(sub)}`)).json()) as Array<{
    method: string;
    path: string;
    token: string;
  }>;
}

/** Texts the bot stand-in received for `chatId`. */
export async function sentTexts(chatId: number): Promise<string[]> {
  const calls = (await (await fetch(`${standInUrl}/__calls?chat_id=${chatId}&method=sendMessage`)).json()) as Array<{
    payload: { text: string };
  }>;
  return calls.map((c) => c.payload.text);
}

/** Langfuse events the stand-in received (trace-create / span-create bodies). */
export async function langfuseEvents(): Promise<Array<{ type: string; body: Record<string, unknown> }>> {
  return (await (await fetch(`${standInUrl}/__langfuse`)).json()) as Array<{ type: string; body: Record<string, unknown> }>;
}

type TestFunction = ConstructorParameters<typeof InngestTestEngine>[0]["function"];
type ExecuteOptions = NonNullable<Parameters<InngestTestEngine["execute"]>[0]>;

/**
 * One run of `fn` on a fresh test engine (an engine keeps the step state of its previous run).
 * Only where time passes is a step replaced: an unmocked `step.sleep*` never resolves under
 * @inngest/test, so tests mock it through `options.steps` (a fresh array per run). `Result` is what
 * the caller expects the function to return (the engine reports it as unknown).
 */
export async function runOnce<Result = unknown>(
  fn: TestFunction,
  event: ExecuteOptions["events"] extends infer E ? (E extends Array<infer One> ? One : never) : never,
  options: Omit<ExecuteOptions, "events"> = {},
) {
  const engine = new InngestTestEngine({ function: fn });
  const { result, error, ctx, state } = await engine.execute({ ...options, events: event ? [event] : undefined } as ExecuteOptions);
  return { result: result as Result, error: error as Error | undefined, ctx, state };
}

/** What Inngest keeps of a run besides its result: every step's output (the test engine's step state). */
async function stepOutputs(state: Record<string, Promise<unknown>>): Promise<unknown[]> {
  return Promise.all(Object.values(state).map((output) => output.catch((error: unknown) => ({ error: String(error) }))));
}

/** Whether anything Inngest keeps of a run (its result, its steps' outputs) contains one of `words`. */
export async function keptWords(run: { result: unknown; state: Record<string, Promise<unknown>> }, words: RegExp): Promise<string[]> {
  const kept = [run.result, ...(await stepOutputs(run.state))].map((value) => JSON.stringify(value) ?? "");
  return kept.filter((json) => words.test(json));
}
