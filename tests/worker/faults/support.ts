// Helpers of the fault and abuse suite (tests/worker/faults/): a seeded PRNG and input generators for
// fuzzing, the owner's view of the database for counting rows, and small request builders for the
// Telegram webhook and the mail push. Test code only.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import postgres from "postgres";
import { expect, inject } from "vitest";

import worker from "../../../worker/index";
import { mulberry32 } from "../../seeded-random";
import { base64, connectMailbox, envelope, pushToken } from "../helpers";
export { base64, connectMailbox, envelope };
export { pushToken };

// ---------------------------------------------------------------------------------------------------
// Deterministic randomness (tests/seeded-random.ts)

export class Fuzz {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)]!;
  }
  /** `count` distinct items (or all of them when fewer). */
  some<T>(items: readonly T[], count: number): T[] {
    const pool = [...items];
    const out: T[] = [];
    while (out.length < count && pool.length > 0) out.push(pool.splice(this.int(0, pool.length - 1), 1)[0]!);
    return out;
  }
  shuffle<T>(items: readonly T[]): T[] {
    return this.some(items, items.length);
  }
  bytes(length: number): Uint8Array {
    return Uint8Array.from({ length }, () => this.int(0, 255));
  }
  /** A string of `length` code points drawn from awkward parts of Unicode (lone surrogates included). */
  unicode(length: number): string {
    let out = "";
    for (let i = 0; i < length; i++) {
      const kind = this.int(0, 9);
      if (kind === 0)
        out += String.fromCharCode(this.int(0xd800, 0xdfff)); // lone surrogate
      else if (kind === 1) out += this.pick(["\u0000", "\u0001", "\u001f", "\u007f", "\t", "\n", "\r"]);
      else if (kind === 2) out += this.pick(["\u200f", "\u202e", "\u200b", "\u200d", "\ufeff", "\u2028", "\u2029"]);
      else if (kind === 3)
        out += String.fromCodePoint(this.int(0x1f300, 0x1faff)); // emoji
      else if (kind === 4)
        out += `e${"\u0301\u0308\u0327".repeat(this.int(1, 20))}`; // combining marks
      else if (kind === 5)
        out += String.fromCharCode(this.int(0x0600, 0x06ff)); // Arabic
      else if (kind === 6)
        out += String.fromCharCode(this.int(0xff01, 0xff5e)); // full width
      else out += String.fromCharCode(this.int(0x20, 0x7e));
    }
    return out;
  }
  /** Printable ASCII, safe in a URL path after encodeURIComponent and in a header value. */
  ascii(length: number): string {
    return Array.from({ length }, () => String.fromCharCode(this.int(0x20, 0x7e))).join("");
  }
  /** Random bytes as %XX escapes: often invalid UTF-8 once decoded. */
  percentBytes(length: number): string {
    return [...this.bytes(length)].map((b) => `%${b.toString(16).padStart(2, "0").toUpperCase()}`).join("");
  }
}

/**
 * encodeURIComponent that also takes lone surrogates (encodeURIComponent throws on them), writing them
 * as the three bytes a sloppy client would send (WTF-8: "\ud800" → %ED%A0%80, invalid UTF-8).
 */
export function percentEncode(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    const next = text.charCodeAt(i + 1);
    if (unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      out += encodeURIComponent(text.slice(i, i + 2));
      i++;
    } else if (unit >= 0xd800 && unit <= 0xdfff) {
      out += [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join("");
    } else {
      out += encodeURIComponent(text[i]!);
    }
  }
  return out;
}

/** The same Unicode edge cases every fuzzed field gets, as JS strings (JSON.stringify escapes them). */
export const UNICODE_EDGES: readonly string[] = [
  "\ud800",
  "lone \udfff low",
  "nul\u0000inside",
  "\u0000",
  "\u202eevil\u202c rtl override",
  "\u200f\u200f\u200f",
  "🧠🦄👩‍👩‍👧‍👦",
  "e\u0301\u0301\u0301\u0301\u0301\u0301\u0301\u0301",
  "Ｄｕｎｅ",
  "\ufeffbom",
  "line\u2028sep",
  "Z̴̡̛̛̖̝̗̓̀͌͊a̷̢̛̘͎̓l̸̛̞̈́g̵̟̈́͒o̴̦͐",
];

/** JSON text with a lone surrogate written as an escape (what JSON.stringify produces for one). */
export const LONE_SURROGATE_JSON = '"\\ud800\\udbff\\udc00x\\udfff"';

/** `depth` nested arrays, as JSON text. */
export function deepArray(depth: number): string {
  return `${"[".repeat(depth)}${"]".repeat(depth)}`;
}

/** `depth` nested objects {"a":{"a":…}}, as JSON text. */
export function deepObject(depth: number): string {
  return `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
}

/** Every path to a leaf or object of `value` (arrays are leaves). */
export function fieldPaths(value: unknown, prefix: string[] = []): string[][] {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return [prefix];
  const paths: string[][] = prefix.length ? [prefix] : [];
  for (const [key, inner] of Object.entries(value)) paths.push(...fieldPaths(inner, [...prefix, key]));
  return paths;
}

/** A deep copy of `value` with the field at `path` replaced. */
export function withField(value: unknown, path: string[], replacement: unknown): unknown {
  const copy = structuredClone(value) as Record<string, unknown>;
  let target = copy;
  for (const key of path.slice(0, -1)) target = target[key] as Record<string, unknown>;
  target[path.at(-1)!] = replacement;
  return copy;
}

/** Values of the wrong type for a field currently holding `current`. */
export function wrongValues(current: unknown): unknown[] {
  const all: unknown[] = [null, 0, -1, 1.5, 2 ** 60, -(2 ** 60), "", "text", "\u0000", true, false, [], [1], {}, { nested: {} }];
  const type = current === null ? "null" : Array.isArray(current) ? "array" : typeof current;
  return all.filter((v) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v) !== type);
}

/** A body of `size` bytes streamed in chunks, with no length known up front (chunked). */
export function streamedBody(text: string, chunkSize = 16 * 1024): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + chunkSize));
      offset += chunkSize;
    },
  });
}

// ---------------------------------------------------------------------------------------------------
// Responses

export interface ErrorShape {
  error: { code: string; message: string; requestId: string };
}

/** Checks that `response` is the app's JSON error shape, with the request id of its header. */
export async function expectErrorShape(response: Response, label: string): Promise<ErrorShape> {
  expect(response.headers.get("content-type"), label).toMatch(/application\/json/);
  const body = (await response.json()) as ErrorShape;
  expect(typeof body.error?.code, label).toBe("string");
  expect(typeof body.error?.message, label).toBe("string");
  expect(body.error.message.length, label).toBeGreaterThan(0);
  expect(body.error.requestId, label).toBe(response.headers.get("x-request-id"));
  return body;
}

// ---------------------------------------------------------------------------------------------------
// The owner's view of the database (test code only; the application never connects as the owner)

let ownerSql: postgres.Sql | undefined;
export function owner(): postgres.Sql {
  // HYPERDRIVE connects as the Worker's login role, which sees nothing on its own: the owner's URL.
  ownerSql ??= postgres(inject("databaseUrl"), { max: 2, fetch_types: false, onnotice: () => {} });
  return ownerSql;
}

/** Row counts of everything a person owns, across every table that can hold their data. */
export async function footprint(userId: string): Promise<Record<string, number>> {
  const [row] = await owner()`
    select (select count(*) from public.entities where user_id = ${userId})::int as entities,
           (select count(*) from public.entities where user_id = ${userId} and status = 'active')::int as active_entities,
           (select count(*) from public.sources where user_id = ${userId})::int as sources,
           (select count(*) from public.edges where user_id = ${userId})::int as edges,
           (select count(*) from public.events where user_id = ${userId})::int as events,
           (select count(*) from public.facts where user_id = ${userId})::int as facts,
           (select count(*) from public.oauth_connections where user_id = ${userId})::int as connections,
           (select count(*) from auth.users where id = ${userId})::int as people,
           (select count(*) from auth.sessions where user_id = ${userId})::int as sessions,
           (select count(*) from auth.login_tokens where user_id = ${userId} and used_at is null)::int as open_login_tokens`;
  return row as Record<string, number>;
}

/** People whose Telegram account id lies in [from, to]. */
export async function telegramPeople(
  from: number,
  to: number,
): Promise<Array<{ id: string; telegram_user_id: string; display_name: string }>> {
  return (await owner()`select id, telegram_user_id::text, display_name from auth.users
                        where telegram_user_id between ${from} and ${to} order by telegram_user_id`) as never;
}

// ---------------------------------------------------------------------------------------------------
// Telegram

let nextUpdateId = 1_000_000 + Math.floor(Math.random() * 1e9);
export function newUpdateId(): number {
  return ++nextUpdateId;
}

export function textUpdate(chatId: number, text: string, updateId = newUpdateId(), from: Record<string, unknown> = {}) {
  return {
    update_id: updateId,
    message: {
      message_id: updateId % 100000,
      date: Math.floor(Date.now() / 1000),
      chat: { id: chatId, type: "private" },
      from: { id: chatId, is_bot: false, first_name: "Ada", ...from },
      text,
    },
  };
}

export function postUpdate(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetchWorker("/api/messenger/webhook", {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": env.TELEGRAM_WEBHOOK_SECRET, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** Every Bot API call the stand-in recorded (all chats); `view` is a text message as the person sees it. */
export async function allBotCalls(): Promise<
  Array<{ method: string; payload: { chat_id?: number; text?: string }; view?: { text: string }; at: number }>
> {
  return (await (await fetch(`${env.STAND_IN_URL}/__calls`)).json()) as never;
}

// ---------------------------------------------------------------------------------------------------
// Mail push

export interface InngestEvent {
  id: string;
  name: string;
  data: Record<string, unknown>;
  deliveries: number;
}

export async function inngestEvents(name?: string): Promise<InngestEvent[]> {
  return (await (
    await fetch(`${env.STAND_IN_URL}/__inngest/events${name ? `?name=${encodeURIComponent(name)}` : ""}`)
  ).json()) as InngestEvent[];
}

// ---------------------------------------------------------------------------------------------------

/** Nothing listens on the discard port: every connection to this "database" is refused at once. */
const NO_DATABASE = { connectionString: "postgres://nobody:nothing@127.0.0.1:9/none" };
// One env object for every direct request, as in a deployed isolate (the configuration is parsed once).
const withoutDatabase = { ...env, HYPERDRIVE: NO_DATABASE } as unknown as Env;

/**
 * A request to the Worker's fetch handler, taking any RequestInit including streamed bodies.
 *
 * `database: false` is for requests that must be refused before the database: they run against a
 * database that refuses every connection, so a request that reached it fails with a 5xx (and could
 * not have written anything), and they call the handler directly. The default goes through
 * `exports.default.fetch` like helpers.call: each request its own I/O context, so its database
 * connection is closed when it ends (called directly from a test, connections stay open until the
 * test ends and past 50 the embedded Postgres hangs up). Direct calls also keep the suite fast: in
 * this pool version every `exports.default.fetch` wraps the entrypoint's prototype in one more Proxy
 * (createProxyPrototypeClass), so each call is slower than the one before (2 ms at first, 17 ms after
 * 250 calls), while the Worker called directly stays under 1 ms.
 */
export async function fetchWorker(path: string, init: RequestInit = {}, options: { database?: boolean } = {}): Promise<Response> {
  const streamed = init.body instanceof ReadableStream;
  const request = new Request(`https://soma.test${path}`, {
    redirect: "manual",
    ...init,
    ...(streamed ? { duplex: "half" } : {}),
  } as RequestInit);
  if (options.database !== false) return exports.default.fetch(request);
  const ctx = createExecutionContext();
  const response = await worker.fetch(request, withoutDatabase, ctx);
  await waitOnExecutionContext(ctx);
  return response;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
