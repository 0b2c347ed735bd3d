// Guards every public endpoint against bad input: deterministic fuzzing (mulberry32, fixed seeds) with
// random bytes, truncated and deeply nested JSON, a wrong type in every field of a valid body, huge
// strings, bodies over the route's limit (declared and streamed), Unicode edge cases (lone surrogates,
// NUL, RTL marks, emoji, combining marks), wrong content types and empty bodies. Whatever arrives:
// never a 5xx, every error is the JSON shape {error:{code,message,requestId}}, and a refused request
// writes nothing (rows of the people involved, people in a sentinel Telegram id range, Bot API calls,
// Inngest events, sessions). Inputs that are valid however odd are answered once each.
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { WELCOME } from "../../../agents/commands/index";
import { createLoginToken, type Person } from "../../../db/repositories/auth";
import { callWithEnv, newPerson, readChatStream, sessionCookie, signInPage, testDatabase } from "../helpers";
import {
  allBotCalls,
  base64,
  connectMailbox,
  deepArray,
  deepObject,
  envelope,
  expectErrorShape,
  fetchWorker,
  fieldPaths,
  footprint,
  Fuzz,
  inngestEvents,
  LONE_SURROGATE_JSON,
  postUpdate,
  percentEncode,
  pushToken,
  streamedBody,
  telegramPeople,
  UNICODE_EDGES,
  withField,
  wrongValues,
} from "./support";

const SEED = 0x50ba_f022;
const ORIGIN = "https://soma.test";
/** Sentinel Telegram account ids: refused input must create nobody here; accepted input one person per sender. */
const REFUSED_FROM = 7_700_000_000;
const ACCEPTED_FROM = 7_700_500_000;

interface Case {
  label: string;
  path: string;
  init: RequestInit;
}

const tally = new Map<string, number>();
const statuses = new Map<string, Map<number, number>>();

function record(endpoint: string, status: number) {
  const seen = statuses.get(endpoint) ?? new Map<number, number>();
  seen.set(status, (seen.get(status) ?? 0) + 1);
  statuses.set(endpoint, seen);
}

/** Runs `cases` (8 at a time) and checks the invariants every response must hold; stops at the first failure. */
async function run(
  endpoint: string,
  cases: Case[],
  options: { database?: boolean; jsonErrors?: (response: Response, c: Case) => boolean; each?: (c: Case, response: Response) => Promise<void> } = {},
) {
  tally.set(endpoint, (tally.get(endpoint) ?? 0) + cases.length);
  const queue = [...cases];
  const worker = async () => {
    for (let c = queue.shift(); c; c = queue.shift()) {
      const label = `${endpoint} — ${c.label}`;
      try {
        const response = await fetchWorker(c.path, c.init, { database: options.database ?? true });
        record(endpoint, response.status);
        expect(response.status, label).toBeLessThan(500);
        if (response.status >= 400 && (options.jsonErrors?.(response, c) ?? true)) await expectErrorShape(response.clone(), label);
        await options.each?.(c, response);
        if (!response.bodyUsed) await response.body?.cancel();
      } catch (error) {
        queue.length = 0; // the other workers stop too: nothing runs on into the next test
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

const JSON_TYPE = { "content-type": "application/json" };
const WRONG_CONTENT_TYPES = ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=xyz", "application/xml", "application/jsonx", "json", "", "text/json\u00e9"];

/**
 * The body families every JSON endpoint gets: `valid` is a body the route accepts (used truncated,
 * with a wrong type in each field, under wrong content types); `limit` is the route's body limit.
 */
function bodyCases(fuzz: Fuzz, path: string, headers: Record<string, string>, valid: unknown, limit: number, options: { skipPaths?: string[]; extraWrong?: Record<string, unknown[]>; wrongPerField?: number } = {}): Case[] {
  const cases: Case[] = [];
  const post = (label: string, body: BodyInit | null | undefined, extra: Record<string, string> = JSON_TYPE): Case => ({
    label,
    path,
    init: { method: "POST", headers: { ...headers, ...extra }, ...(body === undefined ? {} : { body }) },
  });
  const text = JSON.stringify(valid);
  for (let i = 0; i < 6; i++) cases.push(post(`random bytes #${i}`, fuzz.bytes(fuzz.int(1, 4096))));
  for (let i = 0; i < 5; i++) cases.push(post(`truncated JSON #${i}`, text.slice(0, fuzz.int(1, text.length - 1))));
  // Deep enough for any recursive parser or validator, and inside the limit.
  const depth = Math.min(Math.floor(limit / 12), 50_000);
  cases.push(post(`nested arrays, depth ${depth}`, deepArray(depth)));
  cases.push(post(`nested objects, depth ${Math.floor(depth / 3)}`, deepObject(Math.floor(depth / 3))));
  for (const [i, path_] of fuzz.some(fieldPaths(valid).filter((p) => p.length > 0 && !options.skipPaths?.includes(p.join("."))), 3).entries()) {
    cases.push(post(`deep nesting in ${path_.join(".")} #${i}`, JSON.stringify(withField(valid, path_, "__DEEP__")).replace('"__DEEP__"', deepArray(Math.floor(depth / 2)))));
  }
  for (const field of fieldPaths(valid)) {
    const name = field.join(".");
    if (!name || options.skipPaths?.includes(name)) continue;
    let current: unknown = valid;
    for (const key of field) current = (current as Record<string, unknown>)[key];
    const wrong = [...fuzz.some(wrongValues(current), options.wrongPerField ?? 2), ...(options.extraWrong?.[name] ?? [])];
    for (const value of wrong) cases.push(post(`${name} = ${JSON.stringify(value)?.slice(0, 40)}`, JSON.stringify(withField(valid, field, value))));
  }
  // Over the limit: declared, declared but lying (small length, big body), and streamed with no length.
  const big = JSON.stringify(withField(valid, fieldPaths(valid).find((p) => p.length > 0)!, "x".repeat(limit + 1024)));
  cases.push(post(`huge body, ${big.length} bytes with content-length`, big, { ...JSON_TYPE, "content-length": String(big.length) }));
  cases.push(post(`huge body, ${big.length} bytes streamed`, streamedBody(big)));
  cases.push(post(`huge body of random bytes, streamed`, streamedBody(String.fromCharCode(...fuzz.bytes(2048)).repeat(Math.ceil((limit + 1) / 2048)))));
  cases.push(post(`body declaring a small content-length`, big, { ...JSON_TYPE, "content-length": "10" }));
  // Unicode where it can never be valid (the top level, keys), and lone surrogates as escapes.
  cases.push(post("a lone surrogate string as the body", LONE_SURROGATE_JSON));
  cases.push(post("a NUL string as the body", '"\\u0000"'));
  cases.push(post("emoji keys", JSON.stringify({ "🧠": 1, "\u202e": "\u0000" })));
  for (const edge of fuzz.some(UNICODE_EDGES, 3)) cases.push(post(`unicode body ${JSON.stringify(edge)}`, edge));
  // Content types and empty bodies.
  for (const type of WRONG_CONTENT_TYPES) cases.push(post(`valid body as ${JSON.stringify(type)}`, text, { "content-type": type }));
  cases.push(post("the valid body with no content-type header", text, {}));
  cases.push(post("empty body", ""));
  cases.push(post("no body at all", undefined));
  cases.push(post("whitespace body", "   \n\t  "));
  cases.push(post("JSON null", "null"));
  cases.push(post("JSON array of the valid body", JSON.stringify([valid])));
  return cases;
}

// The app logs every refusal it finds worth a line (mail pushes, failed commands): kept out of the
// output here, counted instead. The Inngest SDK's own logger writes around this.
let muted = 0;
beforeAll(() => {
  for (const method of ["log", "info", "warn", "error", "debug"] as const) vi.spyOn(console, method).mockImplementation(() => void muted++);
});

afterAll(() => {
  vi.restoreAllMocks();
  console.log(`fuzz: ${muted} log lines of the Worker muted`);
  const total = [...tally.values()].reduce((a, b) => a + b, 0);
  for (const [endpoint, count] of tally) {
    const seen = [...(statuses.get(endpoint) ?? new Map<number, number>())].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`).join(" ");
    console.log(`fuzz ${endpoint}: ${count} cases (${seen})`);
  }
  console.log(`fuzz total: ${total} cases over ${tally.size} endpoints`);
});

// -------------------------------------------------------------------------------------------------

describe("POST /api/messenger/webhook", () => {
  it("refuses every malformed update without creating anyone or calling Telegram, and answers every odd but valid one once", async () => {
    const fuzz = new Fuzz(SEED + 1);
    let refusedSender = REFUSED_FROM;
    let acceptedSender = ACCEPTED_FROM;
    let updateId = 900_000_000;
    const update = (sender: number, message: Record<string, unknown> = {}, from: Record<string, unknown> = {}) => ({
      update_id: ++updateId,
      message: { message_id: updateId % 100000, date: 1_700_000_000, chat: { id: sender, type: "private" }, from: { id: sender, is_bot: false, first_name: "Fuzz", ...from }, text: "I read Dune", ...message },
    });
    const secret = { "x-telegram-bot-api-secret-token": env.TELEGRAM_WEBHOOK_SECRET };

    // Refused (or acknowledged and ignored): nothing may be written for any of these senders.
    const refused = bodyCases(fuzz, "/api/messenger/webhook", secret, update(++refusedSender), 256 * 1024, {
      // Fields the route does not read (grammY ignores them): a wrong type there is still a message.
      skipPaths: ["message.date", "message.chat.type"],
      extraWrong: {
        update_id: [-1, 1.5, 2 ** 60],
        "message.message_id": [-1, 1.5, 2 ** 60],
        "message.chat.id": [1.5, 2 ** 60],
        "message.from.id": [1.5, -(2 ** 60)],
        "message.text": ["x".repeat(20_001)],
      },
    });
    // A fresh sender for each refused case, all in the refused range.
    for (const c of refused) {
      if (typeof c.init.body === "string" && c.init.body.includes(String(REFUSED_FROM + 1))) {
        c.init.body = c.init.body.replaceAll(String(REFUSED_FROM + 1), String(++refusedSender));
      }
    }
    const ignored: Array<[string, unknown]> = [
      ["an edited message", { update_id: ++updateId, edited_message: update(++refusedSender).message }],
      ["a callback query", { update_id: ++updateId, callback_query: { id: "1", from: { id: ++refusedSender, is_bot: false, first_name: "\u202e" }, data: "\u0000" } }],
      ["a message from a bot", update(++refusedSender, {}, { is_bot: true })],
      ["a message without a sender", { update_id: ++updateId, message: { ...update(++refusedSender).message, from: undefined } }],
      ["only an update id", { update_id: ++updateId }],
      // Anything but chat.type "private" is not a private chat (finding 1): acknowledged, nobody created.
      ["chat.type of the wrong type", update(++refusedSender, { chat: { id: refusedSender, type: [] } })],
    ];
    for (const [label, body] of ignored) refused.push({ label, path: "/api/messenger/webhook", init: { method: "POST", headers: { ...JSON_TYPE, ...secret }, body: JSON.stringify(body) } });
    await run("POST /api/messenger/webhook (refused)", refused, { database: false });

    // Valid however odd: each from its own sender, each must be answered exactly once.
    const accepted: Array<[string, unknown]> = [
      ...UNICODE_EDGES.map((edge): [string, unknown] => [`text ${JSON.stringify(edge)}`, update(++acceptedSender, { text: edge })]),
      ...fuzz.some(UNICODE_EDGES, 4).map((edge): [string, unknown] => [`first_name ${JSON.stringify(edge)}`, update(++acceptedSender, {}, { first_name: edge, last_name: edge })]),
      ["first_name NUL only", update(++acceptedSender, {}, { first_name: "\u0000" })],
      ["first_name of 50 000 characters", update(++acceptedSender, {}, { first_name: "Ж".repeat(50_000) })],
      ["random unicode text", update(++acceptedSender, { text: fuzz.unicode(300) })],
      ["text at the 20 000 character limit", update(++acceptedSender, { text: "x".repeat(20_000) })],
      ["a caption and no text", update(++acceptedSender, { text: undefined, caption: "🦄\u0000" })],
      ["a photo with no text", update(++acceptedSender, { text: undefined, photo: [{ file_id: "x", file_unique_id: "y", width: 1, height: 1 }] })],
      ["date of the wrong type", update(++acceptedSender, { date: "\u0000" })],
      ["a lone surrogate command", update(++acceptedSender, { text: "/forget \ud800" })],
      ["a NUL in /forget (regression: wedged the inbox)", update(++acceptedSender, { text: "/forget a\u0000b" })],
      ["a NUL in /memories", update(++acceptedSender, { text: "/memories bo\u0000ok" })],
    ];
    await run(
      "POST /api/messenger/webhook (accepted)",
      accepted.map(([label, body]) => ({ label, path: "/api/messenger/webhook", init: { method: "POST", headers: { ...JSON_TYPE, ...secret }, body: JSON.stringify(body) } })),
      { each: async (c, response) => expect(response.status, c.label).toBe(200) },
    );

    expect(await telegramPeople(REFUSED_FROM, ACCEPTED_FROM - 1)).toEqual([]);
    const isSentinel = (id: number | undefined) => id !== undefined && id >= REFUSED_FROM && id < ACCEPTED_FROM + 1_000_000;
    const deadline = Date.now() + 15_000;
    let sent: Map<number, string[]>;
    for (;;) {
      sent = new Map();
      for (const call of (await allBotCalls()).filter((c) => c.method === "sendMessage" && isSentinel(c.payload.chat_id))) {
        sent.set(call.payload.chat_id!, [...(sent.get(call.payload.chat_id!) ?? []), String(call.payload.text)]);
      }
      if (sent.size >= accepted.length || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await new Promise((resolve) => setTimeout(resolve, 200)); // a duplicate would arrive now
    const chats = [...sent.keys()];
    expect(chats.filter((id) => id < ACCEPTED_FROM), "Bot API calls to refused senders").toEqual([]);
    expect(chats.sort(), "one chat per accepted update").toHaveLength(accepted.length);
    for (const [chat, texts] of sent) {
      expect(texts, `replies to ${chat}`).toHaveLength(1);
      expect(texts[0]!.startsWith(WELCOME), `replies to ${chat}`).toBe(true);
    }
    const people = await telegramPeople(ACCEPTED_FROM, ACCEPTED_FROM + 999_999);
    expect(people).toHaveLength(accepted.length);
    expect(people.some((p) => p.display_name.includes("\u0000"))).toBe(false);
  });
});

describe("POST /api/webhooks/mail", () => {
  it("refuses or acknowledges every malformed push (right token, valid OIDC token) and sends no event", async () => {
    const fuzz = new Fuzz(SEED + 2);
    const { userId, email } = await connectMailbox("mail-fuzz");
    const bearer = await pushToken();
    const headers = { authorization: `Bearer ${bearer}` };
    const path = `/api/webhooks/mail?token=${percentEncode(env.MAIL_PUSH_TOKEN)}`;
    const valid = envelope({ emailAddress: email, historyId: "4242" }, "fuzz-valid-template");
    const cases = bodyCases(fuzz, path, headers, valid, 64 * 1024, {
      // The one field whose value decides: keep it broken below, never the valid template.
      skipPaths: ["message.data"],
      extraWrong: { "message.messageId": ["", "x".repeat(201)], subscription: ["x".repeat(501)] },
    });
    // Every case above carries the valid template's message id; none may become an event.
    const badData: Array<[string, unknown]> = [
      ["data that is not base64", "%%%\u0000"],
      ["base64 of random bytes", btoa(String.fromCharCode(...fuzz.bytes(64)))],
      ["base64 of truncated JSON", base64(JSON.stringify({ emailAddress: email, historyId: "1" }).slice(0, 20))],
      ["a lone surrogate in the address", { emailAddress: `\ud800${email}`, historyId: "1" }],
      ["an RTL mark in the address", { emailAddress: `\u202e${email}`, historyId: "1" }],
      ["a NUL in the address", { emailAddress: `${email}\u0000`, historyId: "1" }],
      ["Arabic-Indic digits as history id", { emailAddress: email, historyId: "١٢٣" }],
      ["a negative history id", { emailAddress: email, historyId: -5 }],
      ["a fractional history id", { emailAddress: email, historyId: 1.5 }],
      ["a history id of 21 digits", { emailAddress: email, historyId: "1".repeat(21) }],
      ["an emoji history id", { emailAddress: email, historyId: "🦄" }],
      ["a nested notification", { emailAddress: { email }, historyId: "1" }],
      ["no address", { historyId: "1" }],
      ["JSON null", null],
    ];
    for (const [label, data] of badData) {
      const body = envelope(data === null ? base64("null") : data, `fuzz-bad-${fuzz.int(0, 1e9)}-\ud800`);
      cases.push({ label: `data: ${label}`, path, init: { method: "POST", headers: { ...headers, ...JSON_TYPE }, body: JSON.stringify(body) } });
    }
    await run("POST /api/webhooks/mail", cases, {
      database: false, // refused, or acknowledged without looking for the mailbox
      each: async (c, response) => expect([204, 400, 413, 415], c.label).toContain(response.status),
    });
    expect((await inngestEvents("mail/notification.received")).filter((e) => e.data.userId === userId)).toEqual([]);

    // Odd but valid message ids: exactly one event each.
    const odd = ["🦄-1", "\u202e-2", "e\u0301\u0301-3", "x".repeat(200)];
    await run(
      "POST /api/webhooks/mail (accepted)",
      odd.map((messageId) => ({ label: `message id ${JSON.stringify(messageId).slice(0, 30)}`, path, init: { method: "POST", headers: { ...headers, ...JSON_TYPE }, body: JSON.stringify(envelope({ emailAddress: email, historyId: "77" }, messageId)) } })),
      { each: async (c, response) => expect(response.status, c.label).toBe(204) },
    );
    const events = (await inngestEvents("mail/notification.received")).filter((e) => e.data.userId === userId);
    expect(events.map((e) => e.id).sort()).toEqual(odd.map((id) => `gmail-push-${id}`).sort());
    expect(events.every((e) => e.deliveries === 1)).toBe(true);
  });
});

describe("the web API, signed in", () => {
  let person: Person;
  let cookie: string;
  let entityId: string;
  let before: Record<string, number>;

  beforeAll(async () => {
    person = await newPerson("fuzz-web");
    cookie = await sessionCookie(person);
    const [row] = (await testDatabase().withUser(person.id, (tx) =>
      tx.execute(sql`insert into entities (user_id, type, name, normalized_name) values (${person.id}, 'book', 'Dune', 'dune') returning id`),
    )) as unknown as Array<{ id: string }>;
    entityId = row!.id;
    before = await footprint(person.id);
  });

  it("POST /api/chat refuses every malformed body and writes nothing", async () => {
    const fuzz = new Fuzz(SEED + 3);
    const cases = bodyCases(fuzz, "/api/chat", { cookie, origin: ORIGIN }, { message: "I read Solaris" }, 64 * 1024, {
      extraWrong: { message: ["", "   \n\t ", "x".repeat(8001)] },
      wrongPerField: 6,
    });
    await run("POST /api/chat", cases);
    expect(await footprint(person.id)).toEqual(before);
    const transcript = await fetchWorker("/api/agent/get-messages", { headers: { cookie } });
    expect(await transcript.json()).toEqual([]);
  });

  it("POST /api/chat answers odd but valid messages once each", async () => {
    const speaker = await newPerson("fuzz-chat");
    const speakerCookie = await sessionCookie(speaker);
    const fuzz = new Fuzz(SEED + 4);
    const messages = [...UNICODE_EDGES.filter((m) => m.trim()), fuzz.unicode(200), "x".repeat(8000), "I read \ud800Dune", "I read Du\u0000ne"];
    expect(messages.length).toBeLessThanOrEqual(19); // the chat limit is 20 a minute
    tally.set("POST /api/chat (accepted)", messages.length);
    for (const message of messages) {
      const response = await fetchWorker("/api/chat", { method: "POST", headers: { cookie: speakerCookie, origin: ORIGIN, ...JSON_TYPE }, body: JSON.stringify({ message }) });
      record("POST /api/chat (accepted)", response.status);
      expect(response.status, JSON.stringify(message).slice(0, 40)).toBe(200);
      const { text } = await readChatStream(response);
      expect(text.length, JSON.stringify(message).slice(0, 40)).toBeGreaterThan(0);
    }
    const transcript = (await (await fetchWorker("/api/agent/get-messages", { headers: { cookie: speakerCookie } })).json()) as Array<{ role: string }>;
    expect(transcript.map((m) => m.role)).toEqual(messages.flatMap(() => ["user", "assistant"]));
  });

  it("GET /api/memories?type=&q= never fails and shows only the person's own memories", async () => {
    const fuzz = new Fuzz(SEED + 5);
    const queries: string[] = [];
    for (const edge of UNICODE_EDGES) queries.push(`q=${percentEncode(edge)}`, `type=${percentEncode(edge)}`);
    for (let i = 0; i < 8; i++) queries.push(`q=${fuzz.percentBytes(fuzz.int(1, 40))}`, `type=${fuzz.percentBytes(fuzz.int(1, 12))}&q=${percentEncode(fuzz.unicode(20))}`);
    queries.push(
      "q=",
      "q=%20%20",
      `q=${"x".repeat(501)}`,
      `q=${"dune ".repeat(99)}`,
      `q=${percentEncode("dune & | ! ( ) : * ' \\ <-> %")}`,
      "q=%00",
      "q=%ED%A0%80",
      "q=%C0%80",
      "q=%",
      "q=%E0%A4%A",
      "type=book&type=movie&q=a&q=b",
      "type=BOOK",
      "type=b%00ok",
      `type=${"a".repeat(41)}`,
      "limit=0",
      "limit=-1",
      "limit=1.5",
      "limit=1e2",
      "limit=Infinity",
      "limit=NaN",
      `limit=${"9".repeat(400)}`,
      "limit=0x10",
      "q[]=a",
      "q=dune&q[foo]=bar",
    );
    await run(
      "GET /api/memories",
      queries.map((query) => ({ label: query.slice(0, 60), path: `/api/memories?${query}`, init: { headers: { cookie } } })),
      {
        each: async (c, response) => {
          if (response.status !== 200) return expect(response.status, c.label).toBe(400);
          const { memories } = (await response.json()) as { memories: Array<{ id: string }> };
          for (const memory of memories) expect(memory.id, c.label).toBe(entityId);
        },
      },
    );
    expect(await footprint(person.id)).toEqual(before);
  });

  it("DELETE /api/memories/:id refuses every malformed id and deletes nothing", async () => {
    const fuzz = new Fuzz(SEED + 6);
    const ids = [
      ...UNICODE_EDGES.map((edge) => percentEncode(edge)),
      ...Array.from({ length: 8 }, () => fuzz.percentBytes(fuzz.int(1, 36))),
      ...Array.from({ length: 4 }, () => percentEncode(fuzz.ascii(fuzz.int(1, 60)))),
      crypto.randomUUID(),
      crypto.randomUUID().toUpperCase(),
      entityId.toUpperCase().replace(/-/g, ""),
      `${entityId}%00`,
      `${entityId}x`,
      entityId.slice(0, 35),
      `{${entityId}}`,
      "00000000-0000-0000-0000-000000000000",
      "ffffffff-ffff-ffff-ffff-ffffffffffff",
      `${entityId}%2F..`,
      "%2e%2e",
      "x".repeat(100_000),
      `'%20or%201=1%20--`,
    ];
    const cases: Case[] = ids.map((id) => ({ label: `id ${id.slice(0, 50)}`, path: `/api/memories/${id}`, init: { method: "DELETE", headers: { cookie, origin: ORIGIN } } }));
    // Bodies are not read, but must not matter either.
    for (let i = 0; i < 4; i++) cases.push({ label: `random body #${i}`, path: `/api/memories/${crypto.randomUUID()}`, init: { method: "DELETE", headers: { cookie, origin: ORIGIN, ...JSON_TYPE }, body: fuzz.bytes(fuzz.int(1, 70_000)) } });
    await run("DELETE /api/memories/:id", cases, { each: async (c, response) => expect([400, 404, 405], c.label).toContain(response.status) });
    expect(await footprint(person.id)).toEqual(before);
  });

  it("DELETE /api/account refuses every cross-site, forged or malformed attempt and deletes nothing", async () => {
    const fuzz = new Fuzz(SEED + 7);
    const cases: Case[] = [];
    const origins = [
      "null",
      "https://evil.example",
      "https://soma.test.evil.example",
      "http://soma.test",
      "https://soma.test:8443",
      "https://SOMA.test ",
      "soma.test",
      "https://soma.test/",
      "\u00e9\u00ff",
      // Never blank: a blank Origin is no Origin, which the rule lets through (non-browser clients).
      ...Array.from({ length: 6 }, () => `x${fuzz.ascii(fuzz.int(1, 80))}`),
    ];
    for (const origin of origins) cases.push({ label: `origin ${JSON.stringify(origin)}`, path: "/api/account", init: { method: "DELETE", headers: { cookie, origin } } });
    for (const site of ["cross-site", "same-site", "CROSS-SITE", "", fuzz.ascii(10)]) {
      cases.push({ label: `no origin, sec-fetch-site ${JSON.stringify(site)}`, path: "/api/account", init: { method: "DELETE", headers: { cookie, "sec-fetch-site": site } } });
    }
    const cookies = [
      "soma_session=",
      "soma_session=forged",
      `soma_session=${"a".repeat(10_000)}`,
      "soma_session=%E0%A4%A",
      "soma_session=%00",
      `soma_session="${cookie.split("=")[1]}x"`,
      `soma_session=${cookie.split("=")[1]!.slice(0, -1)}`,
      ...Array.from({ length: 6 }, () => `soma_session=${percentEncode(fuzz.unicode(30))}`),
      ...Array.from({ length: 3 }, () => fuzz.ascii(fuzz.int(1, 200))),
    ];
    for (const forged of cookies) cases.push({ label: `cookie ${forged.slice(0, 50)}`, path: "/api/account", init: { method: "DELETE", headers: { cookie: forged, origin: ORIGIN } } });
    for (let i = 0; i < 4; i++) cases.push({ label: `random body, cross-site #${i}`, path: "/api/account", init: { method: "DELETE", headers: { cookie, origin: "https://evil.example", ...JSON_TYPE }, body: fuzz.bytes(fuzz.int(1, 5000)) } });
    await run("DELETE /api/account", cases, { each: async (c, response) => expect([401, 403], c.label).toContain(response.status) });
    expect(await footprint(person.id)).toEqual(before);
    expect((await fetchWorker("/api/me", { headers: { cookie } })).status).toBe(200);
  });
});

describe("sign-in routes", () => {
  it("POST /auth/link/:token refuses every unknown or malformed token, spends nothing and starts no session", async () => {
    const fuzz = new Fuzz(SEED + 8);
    const person = await newPerson("fuzz-link");
    const token = await createLoginToken(testDatabase(), person.id, 600);
    const tokens = [
      ...UNICODE_EDGES.map((edge) => percentEncode(edge)),
      ...Array.from({ length: 8 }, () => fuzz.percentBytes(fuzz.int(1, 64))),
      ...Array.from({ length: 4 }, () => percentEncode(fuzz.ascii(fuzz.int(1, 80)))),
      `${token}x`,
      token.slice(0, -1),
      token.toUpperCase(),
      `${token}%00`,
      "x".repeat(100_000),
    ];
    // Sent as the link's page would (its nonce and cookie), so that the token itself is what is refused.
    const page = await signInPage(`/auth/link/${token}`);
    const fromPage = () => ({ origin: ORIGIN, "content-type": "application/x-www-form-urlencoded", cookie: page.cookie });
    const cases: Case[] = tokens.map((t) => ({ label: `token ${t.slice(0, 50)}`, path: `/auth/link/${t}`, init: { method: "POST", headers: fromPage(), body: `nonce=${page.nonce}` } }));
    for (const origin of ["https://evil.example", "null", `x${fuzz.ascii(30)}`]) cases.push({ label: `the real token from origin ${origin}`, path: `/auth/link/${token}`, init: { method: "POST", headers: { origin } } });
    for (let i = 0; i < 4; i++) cases.push({ label: `random body #${i}`, path: `/auth/link/${fuzz.ascii(20).replace(/\W/g, "")}x`, init: { method: "POST", headers: { ...fromPage(), ...JSON_TYPE }, body: fuzz.bytes(2000) } });
    await run("POST /auth/link/:token", cases, {
      each: async (c, response) => {
        expect([400, 403, 404, 405], c.label).toContain(response.status);
        expect(response.headers.get("set-cookie"), c.label).toBeNull();
      },
    });
    expect(await footprint(person.id)).toMatchObject({ sessions: 0, open_login_tokens: 1 });
  });

  it("GET /auth/telegram refuses every unsigned, mis-signed or malformed widget login", async () => {
    const fuzz = new Fuzz(SEED + 9);
    const sign = async (fields: Record<string, string>) => {
      const dataCheckString = Object.keys(fields).sort().map((k) => `${k}=${fields[k]}`).join("\n");
      const secret = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(env.TELEGRAM_BOT_TOKEN));
      const key = await crypto.subtle.importKey("raw", secret, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
      const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(dataCheckString)));
      return new URLSearchParams({ ...fields, hash: [...mac].map((b) => b.toString(16).padStart(2, "0")).join("") }).toString();
    };
    const now = () => String(Math.floor(Date.now() / 1000));
    let sender = REFUSED_FROM + 500_000 - 1000;
    const base = () => ({ id: String(++sender), first_name: "Fuzz", auth_date: now() });
    const queries: string[] = [];
    for (let i = 0; i < 8; i++) queries.push(fuzz.percentBytes(fuzz.int(1, 80)));
    for (let i = 0; i < 4; i++) queries.push(new URLSearchParams({ ...base(), hash: fuzz.ascii(64) }).toString());
    for (const field of ["id", "first_name", "last_name", "username", "photo_url", "auth_date", "hash"]) {
      for (const value of fuzz.some(["", "abc", "-1", "0", "1.5", "1e400", "0x10", "9".repeat(30), "\u0000", "\ud800", "🦄", "x".repeat(5000), "javascript:alert(1)"], 3)) {
        queries.push(new URLSearchParams({ ...base(), hash: "a".repeat(64), [field]: value }).toString());
      }
    }
    // Signed by the right bot but wrong: a field that is not a number, stale, from the future, tampered.
    queries.push(await sign({ ...base(), id: "abc" }));
    queries.push(await sign({ ...base(), id: "-5" }));
    queries.push(await sign({ ...base(), auth_date: String(Math.floor(Date.now() / 1000) - 3600) }));
    queries.push(await sign({ ...base(), auth_date: String(Math.floor(Date.now() / 1000) + 3600) }));
    queries.push((await sign({ ...base(), first_name: "Mallory" })).replace("Mallory", "Alice"));
    queries.push(`hash=${"0".repeat(64)}&${await sign(base())}`);
    queries.push(`${await sign(base())}&extra=1`);
    queries.push("", "hash=", `id=${REFUSED_FROM + 499_000}&hash=${"f".repeat(64)}&auth_date=${now()}`);
    // Each comes back to the browser that loaded /login (its nonce and cookie), so what is fuzzed is the
    // widget data itself; without them every one is a 403 (tests/worker/sign-in.test.ts, finding 5).
    const browser = await signInPage();
    await run(
      "GET /auth/telegram",
      queries.map((query) => ({ label: query.slice(0, 70), path: `/auth/telegram?nonce=${browser.nonce}&${query}`, init: { headers: { cookie: browser.cookie } } })),
      {
        database: false,
        each: async (c, response) => {
          expect([400, 401], c.label).toContain(response.status);
          expect(response.headers.getSetCookie().filter((cookie) => cookie.startsWith("soma_session=")), c.label).toEqual([]);
        },
      },
    );
    expect(await telegramPeople(REFUSED_FROM, ACCEPTED_FROM - 1)).toEqual([]);

    // Correctly signed with a NUL in the name (regression: a 500 from Postgres): signs in.
    const id = ACCEPTED_FROM + 900_000;
    const response = await fetchWorker(`/auth/telegram?nonce=${browser.nonce}&${await sign({ id: String(id), first_name: "Nu\u0000ll", last_name: "\ud800", auth_date: now() })}`, { headers: { cookie: browser.cookie } });
    tally.set("GET /auth/telegram", (tally.get("GET /auth/telegram") ?? 0) + 1);
    record("GET /auth/telegram", response.status);
    expect(response.status).toBe(303);
    expect(response.headers.getSetCookie().some((cookie) => cookie.startsWith("soma_session="))).toBe(true);
    const [created] = await telegramPeople(id, id);
    expect(created?.display_name).toBe("Null \ufffd");
  });

  it("GET /auth/google/callback refuses every forged, mismatched or malformed callback and signs nobody in", async () => {
    const fuzz = new Fuzz(SEED + 10);
    const flow = (value: unknown) => `soma_google_flow=${percentEncode(typeof value === "string" ? value : JSON.stringify(value))}`;
    const state = "fuzz-state-0123456789";
    const good = { state, verifier: "v".repeat(43), intent: "signin" };
    const cases: Case[] = [];
    const callback = (label: string, query: string, cookie?: string): Case => ({ label, path: `/auth/google/callback?${query}`, init: { headers: cookie ? { cookie } : {} } });
    for (let i = 0; i < 6; i++) cases.push(callback(`random query #${i}`, fuzz.percentBytes(fuzz.int(1, 60))));
    for (let i = 0; i < 4; i++) cases.push(callback(`random cookie #${i}`, `state=${state}&code=abc`, `soma_google_flow=${percentEncode(fuzz.unicode(40))}`));
    for (const shape of [null, [], {}, { state }, { ...good, intent: "admin" }, { ...good, state: 1 }, "{", deepArray(5000), `"${"\\ud800"}"`]) {
      cases.push(callback(`flow cookie ${JSON.stringify(shape)?.slice(0, 30)}`, `state=${state}&code=abc`, flow(shape)));
    }
    for (const given of ["", "x", state.slice(0, -1), `${state}x`, state.toUpperCase(), percentEncode("\u0000"), percentEncode("\ud800"), "x".repeat(10_000)]) {
      cases.push(callback(`state ${given.slice(0, 20)}`, `state=${given}&code=abc`, flow(good)));
    }
    cases.push(callback("no state", "code=abc", flow(good)));
    cases.push(callback("no code", `state=${state}`, flow(good)));
    cases.push(callback("Google's error redirect", `state=${state}&error=access_denied`, flow(good)));
    cases.push(callback("two states", `state=x&state=${state}&code=abc`, flow(good)));
    // The state matches, the code is garbage: Google (the stand-in) refuses it.
    for (const code of [...fuzz.some(UNICODE_EDGES, 4), fuzz.ascii(30), "x".repeat(20_000), "bad-code"]) {
      cases.push(callback(`code ${JSON.stringify(code).slice(0, 20)}`, `state=${state}&code=${percentEncode(code)}`, flow(good)));
      cases.push(callback(`connect, code ${JSON.stringify(code).slice(0, 20)}`, `state=${state}&code=${percentEncode(code)}`, flow({ ...good, intent: "connect" })));
    }
    await run("GET /auth/google/callback", cases, {
      database: false,
      each: async (c, response) => {
        expect([302, 400, 401], c.label).toContain(response.status);
        if (response.status === 302) expect(response.headers.get("location"), c.label).toBe("/login");
        expect(response.headers.get("set-cookie") ?? "", c.label).not.toMatch(/soma_session=/);
      },
    });
  });

  it("POST /logout never fails and never ends another session", async () => {
    const fuzz = new Fuzz(SEED + 11);
    const victim = await newPerson("fuzz-logout");
    const victimCookie = await sessionCookie(victim);
    const cases: Case[] = [];
    for (let i = 0; i < 8; i++) cases.push({ label: `random cookie #${i}`, path: "/logout", init: { method: "POST", headers: { origin: ORIGIN, cookie: `soma_session=${percentEncode(fuzz.unicode(fuzz.int(1, 60)))}` } } });
    for (let i = 0; i < 4; i++) cases.push({ label: `random body #${i}`, path: "/logout", init: { method: "POST", headers: { origin: ORIGIN, ...JSON_TYPE }, body: fuzz.bytes(fuzz.int(0, 70_000)) } });
    for (const origin of ["https://evil.example", "null", `x${fuzz.ascii(20)}`, "http://soma.test"]) {
      cases.push({ label: `the victim's cookie from ${origin}`, path: "/logout", init: { method: "POST", headers: { origin, cookie: victimCookie } } });
    }
    cases.push({ label: "the victim's cookie, sec-fetch-site cross-site", path: "/logout", init: { method: "POST", headers: { "sec-fetch-site": "cross-site", cookie: victimCookie } } });
    cases.push({ label: "no cookie", path: "/logout", init: { method: "POST", headers: { origin: ORIGIN } } });
    cases.push({ label: "a huge cookie", path: "/logout", init: { method: "POST", headers: { origin: ORIGIN, cookie: `soma_session=${"z".repeat(50_000)}` } } });
    await run("POST /logout", cases, { each: async (c, response) => expect([303, 403], c.label).toContain(response.status) });
    expect((await fetchWorker("/api/me", { headers: { cookie: victimCookie } })).status).toBe(200);
  });

  it("POST /auth/dev refuses outside development and cross-site in development, starting no session", async () => {
    const fuzz = new Fuzz(SEED + 12);
    const cases: Case[] = [];
    for (let i = 0; i < 6; i++) cases.push({ label: `random body #${i}`, path: "/auth/dev", init: { method: "POST", headers: { origin: ORIGIN, ...JSON_TYPE }, body: fuzz.bytes(fuzz.int(0, 5000)) } });
    for (const edge of UNICODE_EDGES.slice(0, 4)) cases.push({ label: `unicode body ${JSON.stringify(edge)}`, path: "/auth/dev", init: { method: "POST", headers: { origin: ORIGIN, ...JSON_TYPE }, body: JSON.stringify({ email: edge }) } });
    for (const origin of ["https://evil.example", "null", `x${fuzz.ascii(20)}`]) cases.push({ label: `origin ${origin}`, path: "/auth/dev", init: { method: "POST", headers: { origin } } });
    await run("POST /auth/dev (test environment)", cases, {
      database: false,
      each: async (c, response) => {
        expect([403, 404], c.label).toContain(response.status);
        expect(response.headers.get("set-cookie"), c.label).toBeNull();
      },
    });

    const crossSite = [
      ...["https://evil.example", "null", "http://soma.test", "https://soma.test.evil.example", ...Array.from({ length: 6 }, () => `x${fuzz.ascii(fuzz.int(1, 60))}`)].map((origin) => ({ origin })),
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site" },
    ];
    tally.set("POST /auth/dev (development)", crossSite.length);
    for (const headers of crossSite) {
      const response = await callWithEnv({ ENVIRONMENT: "development" }, "/auth/dev", { method: "POST", headers: { ...headers, ...JSON_TYPE }, body: String.fromCharCode(...fuzz.bytes(100)) });
      record("POST /auth/dev (development)", response.status);
      expect(response.status, JSON.stringify(headers)).toBe(403);
      expect(response.headers.get("set-cookie")).toBeNull();
      await expectErrorShape(response, JSON.stringify(headers));
    }
  });
});

describe("GET | PUT | POST /api/workflows", () => {
  it("never fails on unsigned, malformed or oversized requests, and never reaches a sync", async () => {
    const fuzz = new Fuzz(SEED + 13);
    const cases: Case[] = [];
    const runBody = { event: { name: "conversation/turn.completed", data: {} }, events: [], steps: {}, ctx: { run_id: "x", attempt: 0 } };
    cases.push(...bodyCases(fuzz, "/api/workflows?fnId=soma-fact-extract&stepId=step", {}, runBody, 8 * 1024 * 1024, { wrongPerField: 1 }));
    for (let i = 0; i < 6; i++) cases.push({ label: `GET random query #${i}`, path: `/api/workflows?${fuzz.percentBytes(fuzz.int(1, 60))}`, init: {} });
    for (const query of ["probe=trust", "deployId=%00", "fnId=%ED%A0%80", `fnId=${"x".repeat(10_000)}`]) {
      cases.push({ label: `GET ?${query.slice(0, 30)}`, path: `/api/workflows?${query}`, init: {} });
      cases.push({ label: `POST ?${query.slice(0, 30)}`, path: `/api/workflows?${query}`, init: { method: "POST", headers: { ...JSON_TYPE, "x-inngest-signature": `t=${Date.now()}&s=${fuzz.ascii(64).replace(/\W/g, "a")}` }, body: JSON.stringify(runBody) } });
    }
    await run("GET|POST /api/workflows", cases, {
      database: false,
      // The SDK answers its own refusals ({message}); the app's middleware answers 400 and 413.
      jsonErrors: (response) => response.status === 400 || response.status === 413,
      each: async (c, response) => expect([200, 400, 401, 405, 413, 415], c.label).toContain(response.status),
    });

    // PUT is the sync: a malformed PUT must be refused before it. The bindings point Inngest at a
    // path the stand-in does not serve, so a PUT that reached the sync would answer 5xx here.
    const putBodies: Array<[string, BodyInit]> = [
      // `{"` first: random bytes after it are never valid JSON.
      ...Array.from({ length: 6 }, (_, i): [string, BodyInit] => [`random bytes #${i}`, Uint8Array.from([0x7b, 0x22, ...fuzz.bytes(fuzz.int(1, 4096))])]),
      ["truncated JSON", '{"url": "https://evil.example'],
      ["a lone surrogate outside a string", '{"a": \ud800}'],
      ["NUL", "\u0000"],
    ];
    tally.set("PUT /api/workflows", putBodies.length + 1);
    for (const [label, body] of putBodies) {
      const response = await callWithEnv({ INNGEST_BASE_URL: `${env.STAND_IN_URL}/no-sync-in-fuzz` }, "/api/workflows", { method: "PUT", headers: JSON_TYPE, body });
      record("PUT /api/workflows", response.status);
      expect(response.status, label).toBe(400);
      await expectErrorShape(response, label);
    }
    const huge = await callWithEnv({ INNGEST_BASE_URL: `${env.STAND_IN_URL}/no-sync-in-fuzz` }, "/api/workflows", { method: "PUT", body: streamedBody("x".repeat(8 * 1024 * 1024 + 1)), duplex: "half" } as RequestInit);
    record("PUT /api/workflows", huge.status);
    expect(huge.status).toBe(413);
  });
});

describe("unknown paths", () => {
  it("answer 404 or 405 as JSON, whatever the path, method or body", async () => {
    const fuzz = new Fuzz(SEED + 14);
    const methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"];
    const prefixes = ["/fuzz-", "/api/fuzz-", "/auth/fuzz-", "/api/memories/x/", "/app/fuzz-", "/api/webhooks/fuzz-"];
    const cases: Case[] = [];
    for (let i = 0; i < 30; i++) {
      const method = fuzz.pick(methods);
      const tail = fuzz.pick([() => percentEncode(fuzz.unicode(fuzz.int(1, 30))), () => fuzz.percentBytes(fuzz.int(1, 20)), () => percentEncode(fuzz.ascii(fuzz.int(1, 40))), () => "a/".repeat(fuzz.int(1, 200))])();
      cases.push({
        label: `${method} ${fuzz.pick(prefixes)}${tail.slice(0, 40)}`,
        path: `${fuzz.pick(prefixes)}${tail}`,
        init: { method, ...(method === "GET" || method === "HEAD" ? {} : { headers: JSON_TYPE, body: fuzz.bytes(fuzz.int(0, 3000)) }) },
      });
    }
    cases.push({ label: "a 100 000 character path", path: `/fuzz-${"x".repeat(100_000)}`, init: {} });
    cases.push({ label: "dot segments", path: "/api/%2e%2e/%2e%2e/etc/passwd", init: {} });
    cases.push({ label: "double slashes", path: "//api//memories", init: {} });
    for (const c of cases) c.label = c.label.replace(/\s+$/, "");
    await run("unknown paths", cases, {
      database: false,
      jsonErrors: (_response, c) => c.init.method !== "HEAD", // HEAD: the same headers, no body
      each: async (c, response) => {
        // /api/memories/* is behind the session (401) before any route is matched.
        expect([401, 404, 405], c.label).toContain(response.status);
        if (c.init.method !== "HEAD") expect(response.headers.get("content-type"), c.label).toMatch(/application\/json/);
      },
    });
  });
});
