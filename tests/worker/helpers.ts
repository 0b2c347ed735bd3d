// Shared test helpers for the workerd suites: people with sessions, and requests to the real Worker.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import worker from "../../worker/index";
import type { Database } from "../../db/database";
import { workerdDatabase } from "../../db/workerd-socket";
import { createPerson, createSession, type Person } from "../../db/repositories/auth";
import { saveConnection } from "../../db/repositories/connections";

let database: Database | undefined;

/** The application's own database handle (RLS helper and all), on the test Postgres. */
export function testDatabase(): Database {
  database ??= workerdDatabase(env.HYPERDRIVE.connectionString);
  return database;
}

/** A new person with a unique name (tests never share people). */
export function newPerson(label = "person"): Promise<Person> {
  return createPerson(testDatabase(), { displayName: `${label}-${crypto.randomUUID().slice(0, 8)}` });
}

/** A Cookie header value carrying a fresh session of `person`. */
export async function sessionCookie(person: Person): Promise<string> {
  return `__Host-soma_session=${await createSession(testDatabase(), person.id, 3600)}`;
}

/** A request to the deployed Worker (through its real fetch handler). */
export function call(path: string, init?: RequestInit): Promise<Response> {
  return exports.default.fetch(new Request(`https://soma.test${path}`, init));
}

/** What a sign-in page (/login, /auth/link/:token) hands this browser: the nonce it carries and its cookie. */
export async function signInPage(path = "/login"): Promise<{ nonce: string; cookie: string; html: string }> {
  const response = await call(path);
  const html = await response.text();
  const nonce = /nonce=([\w-]{43})"|name="nonce" value="([\w-]{43})"/.exec(html);
  const cookie = response.headers
    .getSetCookie()
    .find((c) => c.startsWith("__Host-soma_login="))
    ?.split(";")[0];
  if (!nonce || !cookie) throw new Error(`${path} handed out no login nonce`);
  return { nonce: (nonce[1] ?? nonce[2])!, cookie, html };
}

/** Opens a one-time sign-in link as its owner does: the link's page, then its button (same browser). */
export async function openLoginLink(token: string, cookie?: string): Promise<Response> {
  // An expired, used or unknown link is refused by its page already.
  const page = await call(`/auth/link/${token}`, { method: "HEAD" });
  if (page.status !== 200) return page;
  const { nonce, cookie: nonceCookie } = await signInPage(`/auth/link/${token}`);
  return call(`/auth/link/${token}`, {
    method: "POST",
    headers: {
      origin: "https://soma.test",
      "content-type": "application/x-www-form-urlencoded",
      cookie: [nonceCookie, cookie].filter(Boolean).join("; "),
    },
    body: new URLSearchParams({ nonce }),
    redirect: "manual",
  });
}

/** A request to the Worker running with some bindings replaced (another environment, a missing key). */
export async function callWithEnv(overrides: Record<string, unknown>, path: string, init?: RequestInit): Promise<Response> {
  const ctx = createExecutionContext();
  const response = await worker.fetch(new Request(`https://soma.test${path}`, init), { ...env, ...overrides } as Env, ctx);
  await waitOnExecutionContext(ctx);
  return response;
}

export interface BotCall {
  method: string;
  payload: { chat_id?: number; text?: string; [key: string]: unknown };
  at: number;
  /** The text as the person sees it (formatting parsed) and its entities. */
  view?: { text: string; entities: Array<{ type: string; offset: number; length: number; url?: string; language?: string }> };
}

/** Bot API calls the stand-in received for `chatId` (tests/setup/stand-ins.ts). */
export async function botCalls(chatId: number, method = "sendMessage"): Promise<BotCall[]> {
  const response = await fetch(`${env.STAND_IN_URL}/__calls?chat_id=${chatId}&method=${encodeURIComponent(method)}`);
  return (await response.json()) as BotCall[];
}

/** Texts the bot sent to `chatId`, in order, as the person sees them (formatting parsed). */
export async function botReplies(chatId: number): Promise<string[]> {
  return (await botCalls(chatId)).map((call) => call.view?.text ?? String(call.payload.text));
}

/** Makes the Bot API stand-in fail `method` for `chatId` the next `times` calls. */
export async function failBotApi(failure: {
  method: string;
  chatId: number;
  times: number;
  errorCode: number;
  retryAfter?: number;
  description?: string;
}) {
  await fetch(`${env.STAND_IN_URL}/__fail`, { method: "POST", body: JSON.stringify(failure) });
}

/** Puts a file on the stand-in's Telegram file server, as if a person had sent it (`size` may claim more than the bytes). */
export async function putTelegramFile(fileId: string, content: string | Uint8Array, size?: number): Promise<void> {
  const bytes = typeof content === "string" ? new TextEncoder().encode(content) : content;
  const base64 = btoa(String.fromCharCode(...bytes));
  await fetch(`${env.STAND_IN_URL}/__files`, { method: "POST", body: JSON.stringify({ fileId, base64, size }) });
}

let nextChat = Math.floor(Math.random() * 1e9);
/** A Telegram chat id no other test uses. */
export function newChatId(): number {
  return ++nextChat;
}

/** Waits until the bot has sent `count` messages to `chatId`, and returns their texts. */
export async function waitForReplies(chatId: number, count: number, timeoutMs = 10_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const replies = await botReplies(chatId);
    if (replies.length >= count) return replies;
    if (Date.now() > deadline) throw new Error(`expected ${count} replies to chat ${chatId}, got ${JSON.stringify(replies)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Reads an AI SDK UI message stream (SSE) to its end: the chunks and the text they spell. */
export async function readChatStream(
  response: Response,
): Promise<{ text: string; chunks: Array<{ type: string; delta?: string; toolName?: string }> }> {
  const body = await response.text();
  const chunks = body
    .split("\n\n")
    .map((event) => event.replace(/^data: /, "").trim())
    .filter((data) => data && data !== "[DONE]")
    .map((data) => JSON.parse(data) as { type: string; delta?: string; toolName?: string });
  return {
    text: chunks
      .filter((c) => c.type === "text-delta")
      .map((c) => c.delta)
      .join(""),
    chunks,
  };
}

/** Sends one chat message as the person with `cookie` and returns the streamed reply's text. */
export async function chatAs(cookie: string, message: string): Promise<string> {
  const response = await call("/api/chat", {
    method: "POST",
    headers: { cookie, "content-type": "application/json" },
    body: JSON.stringify({ message }),
  });
  if (response.status !== 200) throw new Error(`chat answered ${response.status}`);
  return (await readChatStream(response)).text;
}

/** Polls `read` until `done` accepts its value (background work finishing after a response). */
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** An OIDC token for the mail push, signed by the Google JWKS stand-in (claims override the valid ones). */
export async function pushToken(claims: Record<string, unknown> = {}): Promise<string> {
  const response = await fetch(`${env.STAND_IN_URL}/__jwt`, {
    method: "POST",
    body: JSON.stringify({
      iss: "https://accounts.google.com",
      aud: env.PUBSUB_PUSH_AUDIENCE,
      email: env.PUBSUB_PUSH_SERVICE_ACCOUNT,
      email_verified: true,
      sub: "112233",
      ...claims,
    }),
  });
  return ((await response.json()) as { token: string }).token;
}

/** A person with a connected Gmail mailbox (the mail push's only owner lookup). */
export async function connectMailbox(label = "mail"): Promise<{ userId: string; email: string }> {
  const person = await newPerson(label);
  const email = `box-${crypto.randomUUID().slice(0, 8)}@gmail.example`;
  await testDatabase().withUser(person.id, (tx) =>
    saveConnection(tx, person.id, {
      provider: "google",
      accountEmail: email,
      scope: "gmail.readonly",
      accessTokenEnc: "v1.x.y",
      refreshTokenEnc: null,
      accessTokenExpiresAt: null,
    }),
  );
  return { userId: person.id, email };
}

/** Base64 of `text` as UTF-8 (btoa alone refuses anything past Latin-1). */
export function base64(text: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text)));
}

export function envelope(data: unknown, messageId = `${Date.now()}${Math.floor(Math.random() * 1e9)}`) {
  const encoded = typeof data === "string" ? data : base64(JSON.stringify(data));
  return {
    message: { data: encoded, messageId, publishTime: new Date().toISOString() },
    subscription: "projects/soma-test/subscriptions/gmail-push",
  };
}

/** A request body that counts the pieces a reader pulls from it (nothing is pulled before a read). */
export function countedBody(text: string, piece = 64 * 1024) {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  let pulls = 0;
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        pulls++;
        if (offset >= bytes.length) return controller.close();
        controller.enqueue(bytes.slice(offset, offset + piece));
        offset += piece;
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, length: bytes.length, pieces: Math.ceil(bytes.length / piece), pulls: () => pulls };
}

export interface Received {
  sink: "posthog" | "axiom" | "sentry";
  path: string;
  authorization: string | null;
  query: string;
  body: string;
}

/** What a telemetry sink's stand-in has received so far. */
export async function received(sink: Received["sink"]): Promise<Received[]> {
  return (await (await fetch(`${env.STAND_IN_URL}/__telemetry?sink=${sink}`)).json()) as Received[];
}
