// Guards the boundaries between people and between sites: a model told to reach another person's
// memories through every tool, the HTTP API asked for another person's rows, session fixation, a spent
// sign-in link, cross-site requests to every state-changing route (and the agent's WebSocket), the
// constant-time secret comparison and its identical refusals, and that no secret or token ever reaches
// the Worker's logs. Each attempt is checked against what is really stored afterwards.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { UserAgent } from "../../../agents/user-agent";
import { createLoginToken, type Person } from "../../../db/repositories/auth";
import { secretsEqual } from "../../../worker/auth/secrets";
import { botReplies, callWithEnv, failBotApi, newChatId, newPerson, openLoginLink, sessionCookie, signInPage, testDatabase, waitForReplies } from "../helpers";
import { scriptedModel, type Step } from "../scripted-model";
import { connectMailbox, envelope, expectErrorShape, fetchWorker, footprint, newUpdateId, owner, postUpdate, pushToken, textUpdate } from "./support";

const ORIGIN = "https://soma.test";
const CROSS_SITE: Array<[string, Record<string, string>]> = [
  ["Origin https://evil.example", { origin: "https://evil.example" }],
  ["Origin null", { origin: "null" }],
  ["Origin http://soma.test (another scheme)", { origin: "http://soma.test" }],
  ["Origin https://app.soma.test (a sibling subdomain)", { origin: "https://app.soma.test" }],
  ["no Origin, Sec-Fetch-Site: cross-site", { "sec-fetch-site": "cross-site" }],
  ["no Origin, Sec-Fetch-Site: same-site", { "sec-fetch-site": "same-site" }],
];

const TABLES = ["users", "oauth_connections", "entities", "edges", "events", "facts", "sources"] as const;

/** Every row a person owns in the seven tables, as the owner sees them (test code only). */
async function allRowsOf(userId: string): Promise<Record<string, unknown[]>> {
  const rows: Record<string, unknown[]> = {};
  for (const table of TABLES) {
    const key = table === "users" ? "id" : "user_id";
    rows[table] = await owner().unsafe(`select * from public.${table} where ${key} = $1 order by id`, [userId]);
  }
  return rows;
}

interface Victim {
  person: Person;
  cookie: string;
  book: string;
  author: string;
  names: string[];
}

/** A person with a row in every table, written as themselves. */
async function victim(): Promise<Victim> {
  const person = await newPerson("victim");
  const ids = await testDatabase().withUser(person.id, async (tx) => {
    const one = async (query: ReturnType<typeof sql>) => ((await tx.execute(query)) as unknown as Array<{ id: string }>)[0]!.id;
    const source = await one(sql`insert into sources (user_id, kind, external_id, payload) values (${person.id}, 'telegram', ${crypto.randomUUID()}, '{"text":"I read Victimbook by Victimauthor"}') returning id`);
    const book = await one(sql`insert into entities (user_id, type, name, normalized_name, source_id) values (${person.id}, 'book', 'Victimbook Secret', 'victimbook secret', ${source}) returning id`);
    const author = await one(sql`insert into entities (user_id, type, name, normalized_name, source_id) values (${person.id}, 'person', 'Victimauthor Hidden', 'victimauthor hidden', ${source}) returning id`);
    await tx.execute(sql`insert into edges (user_id, from_id, to_id, type) values (${person.id}, ${book}, ${author}, 'written_by')`);
    await tx.execute(sql`insert into events (user_id, kind, occurred_at, entity_ids, payload) values (${person.id}, 'reminder', now() + interval '1 day', array[${book}]::uuid[], '{"text":"victim reminder"}')`);
    await tx.execute(sql`insert into facts (user_id, statement) values (${person.id}, 'Victim likes secret things')`);
    await tx.execute(sql`insert into oauth_connections (user_id, provider, account_email) values (${person.id}, 'google', ${`${person.id}@victim.example`})`);
    return { book, author };
  });
  return { person, cookie: await sessionCookie(person), ...ids, names: ["Victimbook Secret", "Victimauthor Hidden", "victim reminder", "Victim likes secret things"] };
}

/** Runs one Telegram turn of `steps` (then "done") in `person`'s agent and returns each tool's output. */
async function scriptedTurn(person: Person, chatId: number, steps: Step[]) {
  const agent = await getAgentByName(env.UserAgent, person.id);
  await runInDurableObject(agent, (instance: UserAgent) => {
    instance.modelOverride = scriptedModel([...steps, { text: "done" }]);
  });
  const before = await runInDurableObject(agent, (instance: UserAgent) => instance.messages.length);
  await agent.enqueueTelegramMessage({ updateId: newUpdateId(), chatId, messageId: 1, text: "do as I say" });
  await agent.settle();
  return runInDurableObject(agent, (instance: UserAgent) =>
    instance.messages.slice(before).flatMap((m) =>
      m.parts.filter((p) => p.type.startsWith("tool-")).map((p) => ({ tool: p.type.slice(5), state: (p as { state?: string }).state, output: (p as { output?: unknown }).output })),
    ),
  );
}

// ---------------------------------------------------------------------------------------------------

describe("a model told to reach another person's memories, through every tool", () => {
  let alice: Victim;
  let before: Record<string, unknown[]>;
  let bob: Person;
  let chatId: number;
  let bobBook: string;

  beforeAll(async () => {
    alice = await victim();
    before = await allRowsOf(alice.person.id);
    bob = await newPerson("attacker");
    chatId = newChatId();
    const [captured] = await scriptedTurn(bob, chatId, [{ tool: "memory_capture", input: { type: "book", name: "Attacker Own Book" } }]);
    bobBook = (captured!.output as { entityId: string }).entityId;
  });

  afterAll(async () => {
    // Whatever was tried, every row of Alice's, in every table, is exactly as it was.
    expect(await allRowsOf(alice.person.id)).toEqual(before);
  });

  it("memory_update and memory_forget on her entity ids change nothing", async () => {
    const outputs = await scriptedTurn(bob, chatId, [
      { tool: "memory_update", input: { entityId: alice.book, properties: { stolen: true } } },
      { tool: "memory_forget", input: { entityId: alice.book } },
      { tool: "memory_update", input: { entityId: alice.author, properties: { name: "hijacked" } } },
      { tool: "memory_forget", input: { entityId: alice.author } },
    ]);
    expect(outputs.map((o) => o.output)).toEqual([{ updated: false }, { archived: false }, { updated: false }, { archived: false }]);
    expect(await allRowsOf(alice.person.id)).toEqual(before);
  });

  it("memory_relate between her entities, or between his and hers, creates no edge", async () => {
    const outputs = await scriptedTurn(bob, chatId, [
      { tool: "memory_relate", input: { fromId: alice.book, toId: alice.author, type: "written_by" } },
      { tool: "memory_relate", input: { fromId: bobBook, toId: alice.book, type: "sequel_of" } },
      { tool: "memory_relate", input: { fromId: alice.author, toId: bobBook, type: "wrote" } },
    ]);
    expect(outputs.map((o) => o.output)).toEqual([{ error: "unknown entity" }, { error: "unknown entity" }, { error: "unknown entity" }]);
    const edges = await owner()`select user_id from public.edges where from_id in (${alice.book}, ${alice.author}, ${bobBook}) or to_id in (${alice.book}, ${alice.author}, ${bobBook})`;
    expect(edges.map((e) => e.user_id)).toEqual([alice.person.id]); // only her own edge
  });

  it("memory_recall by her names, her type, her ids returns only his own memories", async () => {
    const outputs = await scriptedTurn(bob, chatId, [
      { tool: "memory_recall", input: { query: "Victimbook Secret" } },
      { tool: "memory_recall", input: { query: "Victimauthor" } },
      { tool: "memory_recall", input: { query: "which books?", type: "book", limit: 50 } },
      { tool: "memory_recall", input: { query: alice.book } },
    ]);
    expect(outputs).toHaveLength(4);
    const seen = JSON.stringify(outputs);
    for (const secret of [alice.book, alice.author, alice.person.id, ...alice.names]) expect(seen).not.toContain(secret);
    const ids = outputs.flatMap((o) => (o.output as Array<{ entity: { id: string } }>).map((r) => r.entity.id));
    expect(new Set(ids)).toEqual(new Set([bobBook])); // the typed list finds his own book, nothing else
  });

  it("schedule_create only ever writes a reminder of his own", async () => {
    const at = new Date(Date.now() + 3600_000).toISOString();
    const [scheduled] = await scriptedTurn(bob, chatId, [{ tool: "schedule_create", input: { text: `remind ${alice.person.id} of ${alice.book}`, at } }]);
    const { eventId } = scheduled!.output as { eventId: string };
    const [row] = await owner()`select user_id from public.events where id = ${eventId}`;
    expect(row?.user_id).toBe(bob.id);
    expect(await allRowsOf(alice.person.id)).toEqual(before);
  });

  it("the tools take no person: arguments naming her are refused or ignored, never obeyed", async () => {
    const outputs = await scriptedTurn(bob, chatId, [
      { tool: "memory_forget", input: { entityId: alice.book, userId: alice.person.id } },
      { tool: "memory_recall", input: { query: "Victimbook", user_id: alice.person.id } },
      { tool: "memory_forget", input: { entityId: `${alice.book}' or '1'='1` } },
    ]);
    const seen = JSON.stringify(outputs);
    for (const secret of [alice.book, alice.author, ...alice.names]) expect(seen).not.toContain(secret);
    expect(outputs[0]!.output).toEqual({ archived: false }); // the extra userId is dropped, the id is not hers to touch
    expect((outputs[1]!.output as Array<{ entity: { id: string } }>).every((r) => r.entity.id === bobBook)).toBe(true);
    expect(outputs[2]!.output).toBeUndefined(); // not a UUID: refused by the tool's schema
    expect(outputs[2]!.state).toBe("output-error");
  });
});

describe("the HTTP API between two people", () => {
  it("DELETE /api/memories/<her id> is 404 and changes nothing; GET /api/memories never shows her rows", async () => {
    const alice = await victim();
    const before = await allRowsOf(alice.person.id);
    const bob = await newPerson("http-attacker");
    const cookie = await sessionCookie(bob);
    for (const id of [alice.book, alice.author]) {
      const response = await fetchWorker(`/api/memories/${id}`, { method: "DELETE", headers: { cookie, origin: ORIGIN } });
      expect(response.status).toBe(404);
      expect((await expectErrorShape(response, id)).error.code).toBe("not_found");
    }
    for (const query of ["", "?type=book", "?type=person", "?q=Victimbook", "?q=Victimauthor%20Hidden", `?q=${alice.book}`, "?q=secret&type=book", "?limit=200"]) {
      const response = await fetchWorker(`/api/memories${query}`, { headers: { cookie } });
      expect(response.status, query).toBe(200);
      const body = await response.text();
      for (const secret of [alice.book, alice.author, alice.person.id, ...alice.names]) expect(body, query).not.toContain(secret);
    }
    const me = (await (await fetchWorker("/api/me", { headers: { cookie } })).json()) as { id: string };
    expect(me.id).toBe(bob.id);
    expect(await allRowsOf(alice.person.id)).toEqual(before);
  });

  it("the transcript door shows only the signed-in person's own conversation", async () => {
    const chatId = newChatId();
    expect((await postUpdate(textUpdate(chatId, "I read Private Diary"))).status).toBe(200);
    await waitForReplies(chatId, 1);
    const bob = await newPerson("transcript-attacker");
    const transcript = await (await fetchWorker("/api/agent/get-messages", { headers: { cookie: await sessionCookie(bob) } })).text();
    expect(transcript).not.toContain("Private Diary");
  });
});

// ---------------------------------------------------------------------------------------------------

function sessionOf(response: Response): string | undefined {
  return response.headers.getSetCookie().find((c) => c.startsWith("soma_session="))?.split(";")[0]?.slice("soma_session=".length);
}

async function whoIs(token: string): Promise<string | null> {
  const response = await fetchWorker("/api/me", { headers: { cookie: `soma_session=${token}` } });
  if (response.status === 401) return null;
  expect(response.status).toBe(200);
  return ((await response.json()) as { id: string }).id;
}

describe("session fixation", () => {
  it("a made-up cookie carried into every sign-in door is replaced by a new random token, and never authenticates", async () => {
    const planted = "attacker-chosen-session-value-0123456789abcdef";
    const signedIn: Array<[string, Response, string]> = [];

    const person = await newPerson("fixation-link");
    const token = await createLoginToken(testDatabase(), person.id, 600);
    signedIn.push(["the /login link", await openLoginLink(token, `soma_session=${planted}`), person.id]);

    const dev = await callWithEnv({ ENVIRONMENT: "development" }, "/auth/dev", { method: "POST", headers: { origin: ORIGIN, cookie: `soma_session=${planted}` } });
    signedIn.push(["the development sign-in", dev, ((await dev.clone().json()) as { person: { id: string } }).person.id]);

    const start = await fetchWorker("/auth/google/start?intent=signin");
    const flow = (start.headers.get("set-cookie") ?? "").split(";")[0]!;
    const state = new URL(start.headers.get("location")!).searchParams.get("state")!;
    const sub = crypto.randomUUID();
    const google = await fetchWorker(`/auth/google/callback?code=good-${sub}&state=${state}`, { headers: { cookie: `${flow}; soma_session=${planted}` } });
    const [googlePerson] = await owner()`select id from auth.users where google_sub = ${sub}`;
    signedIn.push(["Google", google, googlePerson!.id as string]);

    for (const [door, response, personId] of signedIn) {
      expect([200, 303], door).toContain(response.status);
      const fresh = sessionOf(response);
      expect(fresh, door).toMatch(/^[\w-]{40,}$/);
      expect(fresh, door).not.toBe(planted);
      expect(await whoIs(fresh!), door).toBe(personId);
    }
    expect(await whoIs(planted)).toBeNull();
  });

  it("another person's old session cookie carried into a sign-in is not revived and does not become the new session", async () => {
    const carol = await newPerson("fixation-old");
    const old = (await sessionCookie(carol)).slice("soma_session=".length);
    expect((await fetchWorker("/logout", { method: "POST", headers: { origin: ORIGIN, cookie: `soma_session=${old}` } })).status).toBe(303);
    expect(await whoIs(old)).toBeNull();

    const dave = await newPerson("fixation-new");
    const token = await createLoginToken(testDatabase(), dave.id, 600);
    const response = await openLoginLink(token, `soma_session=${old}`);
    expect(response.status).toBe(303);
    const fresh = sessionOf(response)!;
    expect(fresh).not.toBe(old);
    expect(await whoIs(fresh)).toBe(dave.id);
    expect(await whoIs(old)).toBeNull();
    expect(await footprint(carol.id)).toMatchObject({ sessions: 0 });
  });
});

describe("the one-time sign-in link", () => {
  it("a spent link is 400 with no session, however often and however fast it is replayed", async () => {
    const person = await newPerson("spent-link");
    const token = await createLoginToken(testDatabase(), person.id, 600);
    const page = await signInPage(`/auth/link/${token}`);
    const post = () =>
      fetchWorker(`/auth/link/${token}`, {
        method: "POST",
        headers: { origin: ORIGIN, "content-type": "application/x-www-form-urlencoded", cookie: page.cookie },
        body: new URLSearchParams({ nonce: page.nonce }),
      });
    // Five at once: exactly one spends it.
    const burst = await Promise.all(Array.from({ length: 5 }, post));
    expect(burst.map((r) => r.status).sort()).toEqual([303, 400, 400, 400, 400]);
    expect(burst.filter((r) => sessionOf(r))).toHaveLength(1);
    expect(await footprint(person.id)).toMatchObject({ sessions: 1, open_login_tokens: 0 });
    for (let i = 0; i < 3; i++) {
      const again = await post();
      expect(again.status).toBe(400);
      expect(again.headers.get("set-cookie")).toBeNull();
      expect((await expectErrorShape(again, "replay")).error.code).toBe("bad_request");
    }
    expect(await footprint(person.id)).toMatchObject({ sessions: 1, open_login_tokens: 0 });
  });
});

// ---------------------------------------------------------------------------------------------------

describe("cross-site requests to every state-changing route (worker/auth/origin.ts)", () => {
  // The rule: a request with an Origin must come from Soma's own origin; without one, a browser's
  // Sec-Fetch-Site must be same-origin or none; with neither (curl, server-side clients) it passes.
  async function expectRefused(response: Response, label: string) {
    expect(response.status, label).toBe(403);
    expect((await expectErrorShape(response, label)).error.code, label).toBe("forbidden");
    expect(response.headers.get("set-cookie"), label).toBeNull();
  }

  it("POST /logout: refused, and the session lives on", async () => {
    const person = await newPerson("csrf-logout");
    const cookie = await sessionCookie(person);
    for (const [label, headers] of CROSS_SITE) await expectRefused(await fetchWorker("/logout", { method: "POST", headers: { cookie, ...headers } }), label);
    expect(await whoIs(cookie.slice("soma_session=".length))).toBe(person.id);
  });

  it("POST /auth/link/:token: refused, the link is not spent and no session starts", async () => {
    const person = await newPerson("csrf-link");
    const token = await createLoginToken(testDatabase(), person.id, 600);
    for (const [label, headers] of CROSS_SITE) await expectRefused(await fetchWorker(`/auth/link/${token}`, { method: "POST", headers }), label);
    expect(await footprint(person.id)).toMatchObject({ sessions: 0, open_login_tokens: 1 });
    expect((await openLoginLink(token)).status).toBe(303); // still good
  });

  it("POST /auth/dev (development): refused, no session", async () => {
    for (const [label, headers] of CROSS_SITE) {
      await expectRefused(await callWithEnv({ ENVIRONMENT: "development" }, "/auth/dev", { method: "POST", headers }), label);
    }
  });

  it("DELETE /api/memories/:id: refused, the memory stays", async () => {
    const alice = await victim();
    const before = await allRowsOf(alice.person.id);
    for (const [label, headers] of CROSS_SITE) {
      await expectRefused(await fetchWorker(`/api/memories/${alice.book}`, { method: "DELETE", headers: { cookie: alice.cookie, ...headers } }), label);
    }
    expect(await allRowsOf(alice.person.id)).toEqual(before);
  });

  it("DELETE /api/account: refused, every row and the conversation stay", async () => {
    const alice = await victim();
    const chat = await fetchWorker("/api/chat", { method: "POST", headers: { cookie: alice.cookie, origin: ORIGIN, "content-type": "application/json" }, body: '{"message":"I read Keepsake"}' });
    expect(chat.status).toBe(200);
    await chat.text();
    const before = await allRowsOf(alice.person.id);
    for (const [label, headers] of CROSS_SITE) {
      await expectRefused(await fetchWorker("/api/account", { method: "DELETE", headers: { cookie: alice.cookie, ...headers } }), label);
    }
    expect(await allRowsOf(alice.person.id)).toEqual(before);
    expect(await footprint(alice.person.id)).toMatchObject({ people: 1, sessions: 1 });
    const transcript = (await (await fetchWorker("/api/agent/get-messages", { headers: { cookie: alice.cookie } })).json()) as unknown[];
    expect(transcript).toHaveLength(2);
  });

  it("POST /api/chat: refused before the agent, no turn and no memory", async () => {
    // Regression: /api/chat had no origin check, so any page could run turns (and capture memories)
    // with a visitor's cookie where the browser sends it (a same-site page, an older browser).
    const person = await newPerson("csrf-chat");
    const cookie = await sessionCookie(person);
    for (const [label, headers] of CROSS_SITE) {
      const response = await fetchWorker("/api/chat", { method: "POST", headers: { cookie, "content-type": "application/json", ...headers }, body: '{"message":"I read Forged Book"}' });
      await expectRefused(response, label);
    }
    expect(await footprint(person.id)).toMatchObject({ entities: 0, sources: 0 });
    expect(await (await fetchWorker("/api/agent/get-messages", { headers: { cookie } })).json()).toEqual([]);
  });

  it("GET /api/agent (the WebSocket): a cross-site handshake is refused, a same-origin one opens", async () => {
    // Regression: the handshake is a GET, which the CSRF check lets through; a page of another origin
    // could open the person's chat socket and send messages as them.
    const person = await newPerson("csrf-socket");
    const cookie = await sessionCookie(person);
    for (const [label, headers] of CROSS_SITE) {
      await expectRefused(await fetchWorker("/api/agent", { headers: { upgrade: "websocket", cookie, ...headers } }), label);
    }
    const same = await fetchWorker("/api/agent", { headers: { upgrade: "websocket", cookie, origin: ORIGIN } });
    expect(same.status).toBe(101);
    same.webSocket!.accept();
    same.webSocket!.close();
  });

  it("requests with neither Origin nor Sec-Fetch-Site (API clients), or same-origin ones, pass", async () => {
    const person = await newPerson("csrf-allowed");
    const allowed: Array<Record<string, string>> = [{}, { "sec-fetch-site": "same-origin" }, { "sec-fetch-site": "none" }, { origin: ORIGIN }];
    for (const headers of allowed) {
      const cookie = await sessionCookie(person);
      const response = await fetchWorker("/logout", { method: "POST", headers: { cookie, ...headers } });
      expect(response.status, JSON.stringify(headers)).toBe(303);
      expect(await whoIs(cookie.slice("soma_session=".length))).toBeNull();
    }
  });
});

// ---------------------------------------------------------------------------------------------------

describe("shared secrets", () => {
  it("secretsEqual: equal, unequal, different length, empty and missing", async () => {
    const secret = "s3cr3t-value-of-some-length";
    expect(await secretsEqual(secret, secret)).toBe(true);
    expect(await secretsEqual(`${secret.slice(0, -1)}X`, secret)).toBe(false); // same length
    expect(await secretsEqual(`${secret}x`, secret)).toBe(false); // longer
    expect(await secretsEqual(secret.slice(0, 5), secret)).toBe(false); // shorter, a prefix
    expect(await secretsEqual("", secret)).toBe(false);
    expect(await secretsEqual(undefined, secret)).toBe(false);
    expect(await secretsEqual(null, secret)).toBe(false);
    expect(await secretsEqual(undefined, "")).toBe(false); // missing never matches, even an empty secret
    expect(await secretsEqual(null, "")).toBe(false);
    expect(await secretsEqual("", "")).toBe(true); // equal strings; callers refuse an empty configured secret first
    expect(await secretsEqual("é", "e\u0301")).toBe(false); // compared as bytes, no normalization
  });

  it("an empty configured secret refuses everything, including an empty header", async () => {
    const chatId = newChatId();
    const response = await callWithEnv({ TELEGRAM_WEBHOOK_SECRET: "" }, "/api/messenger/webhook", {
      method: "POST",
      headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": "" },
      body: JSON.stringify(textUpdate(chatId, "hello")),
    });
    expect(response.status).toBe(401);
    expect(await botReplies(chatId)).toEqual([]);
  });

  it("the webhook answers a wrong secret of the same length and of another length identically", async () => {
    const secret = env.TELEGRAM_WEBHOOK_SECRET;
    const chatId = newChatId();
    const wrong = { sameLength: `${secret.slice(0, -1)}${secret.endsWith("x") ? "y" : "x"}`, shorter: secret.slice(0, 3), longer: `${secret}-and-more`, empty: "" };
    const shapes: unknown[] = [];
    for (const [label, value] of Object.entries(wrong)) {
      const response = await postUpdate(textUpdate(chatId, "hello"), { "x-telegram-bot-api-secret-token": value });
      expect(response.status, label).toBe(401);
      const body = await expectErrorShape(response.clone(), label);
      shapes.push({ status: response.status, type: response.headers.get("content-type"), code: body.error.code, message: body.error.message, keys: Object.keys(body.error).sort() });
    }
    expect(shapes.every((s) => JSON.stringify(s) === JSON.stringify(shapes[0]))).toBe(true);
    expect(await botReplies(chatId)).toEqual([]);
  });

  it("the mail push answers a wrong token of the same length and of another length identically", async () => {
    const token = env.MAIL_PUSH_TOKEN;
    const { userId, email } = await connectMailbox("secret-compare");
    const body = JSON.stringify(envelope({ emailAddress: email, historyId: "9" }));
    const shapes: unknown[] = [];
    for (const value of [`${token.slice(0, -1)}${token.endsWith("x") ? "y" : "x"}`, token.slice(0, 3), `${token}-and-more`]) {
      const response = await fetchWorker(`/api/webhooks/mail?token=${encodeURIComponent(value)}`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${await pushToken()}` }, body });
      const error = await expectErrorShape(response, value);
      shapes.push({ status: response.status, code: error.error.code, message: error.error.message });
    }
    expect(shapes).toEqual(Array.from({ length: 3 }, () => ({ status: 401, code: "unauthorized", message: "Wrong or missing token." })));
    const events = (await (await fetch(`${env.STAND_IN_URL}/__inngest/events?name=mail/notification.received`)).json()) as Array<{ data: { userId: string } }>;
    expect(events.filter((e) => e.data.userId === userId)).toEqual([]);
  });
});

describe("no secret in the Worker's logs", () => {
  // The Worker and its Durable Objects run in this test's isolate: spying on console sees their log
  // lines (the structured logJson lines, the SDKs' own warnings and errors).
  it("a sign-in link flow, mail pushes with the token, webhooks with the secret, failures included, log none of them", async () => {
    const lines: string[] = [];
    const capture = (...args: unknown[]) => {
      lines.push(args.map((a) => (a instanceof Error ? `${a.name}: ${a.message}\n${a.stack}` : typeof a === "string" ? a : JSON.stringify(a))).join(" "));
    };
    for (const method of ["log", "info", "warn", "error", "debug"] as const) vi.spyOn(console, method).mockImplementation(capture);
    const secrets: Record<string, string> = {};
    try {
      // Telegram: /login through the webhook, then the link, then the session.
      const chatId = newChatId();
      expect((await postUpdate(textUpdate(chatId, "/login"))).status).toBe(200);
      const [reply] = await waitForReplies(chatId, 1);
      const link = new URL(/https:\/\/\S+/.exec(reply!)![0]);
      secrets.loginLinkToken = link.pathname.split("/").pop()!;
      const signIn = await openLoginLink(secrets.loginLinkToken);
      expect(signIn.status).toBe(303);
      secrets.sessionToken = sessionOf(signIn)!;
      expect(await whoIs(secrets.sessionToken)).not.toBeNull();
      // A failed delivery is logged by the agent (proves its lines are captured too).
      await failBotApi({ method: "sendMessage", chatId, times: 1, errorCode: 400 });
      expect((await postUpdate(textUpdate(chatId, "I read Logbook"))).status).toBe(200);
      const deadline = Date.now() + 10_000;
      while (!lines.some((l) => l.includes('"delivery"')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      expect(lines.some((l) => l.includes('"delivery"'))).toBe(true);
      // The same link again (refused), a wrong secret, a wrong mail token.
      expect((await openLoginLink(secrets.loginLinkToken)).status).toBe(400);
      expect((await postUpdate(textUpdate(chatId, "x"), { "x-telegram-bot-api-secret-token": `${env.TELEGRAM_WEBHOOK_SECRET}!` })).status).toBe(401);
      // Mail: a valid push, a rejected OIDC token, a push Inngest cannot take (logged as an error).
      const { email } = await connectMailbox("log-check");
      const bearer = await pushToken();
      secrets.oidcToken = bearer;
      const push = (init: { bearer: string; overrides?: Record<string, unknown> }) => {
        const request = { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${init.bearer}` }, body: JSON.stringify(envelope({ emailAddress: email, historyId: "5" })) };
        const path = `/api/webhooks/mail?token=${encodeURIComponent(env.MAIL_PUSH_TOKEN)}`;
        return init.overrides ? callWithEnv(init.overrides, path, request) : fetchWorker(path, request);
      };
      expect((await push({ bearer })).status).toBe(204);
      expect((await push({ bearer: `${bearer.slice(0, -4)}AAAA` })).status).toBe(401);
      expect((await push({ bearer, overrides: { INNGEST_BASE_URL: "http://127.0.0.1:9" } })).status).toBe(503);
      await (await fetchWorker("/api/me", { headers: { cookie: `soma_session=${secrets.sessionToken}` } })).text();
    } finally {
      vi.restoreAllMocks();
    }
    const configured = {
      TELEGRAM_BOT_TOKEN: env.TELEGRAM_BOT_TOKEN,
      "TELEGRAM_BOT_TOKEN (secret part)": env.TELEGRAM_BOT_TOKEN.split(":")[1]!,
      TELEGRAM_WEBHOOK_SECRET: env.TELEGRAM_WEBHOOK_SECRET,
      MAIL_PUSH_TOKEN: env.MAIL_PUSH_TOKEN,
      INNGEST_EVENT_KEY: (env as unknown as Record<string, string>).INNGEST_EVENT_KEY!,
      INNGEST_SIGNING_KEY: env.INNGEST_SIGNING_KEY,
      TOKEN_ENCRYPTION_KEY: env.TOKEN_ENCRYPTION_KEY,
      GOOGLE_CLIENT_SECRET: (env as unknown as Record<string, string>).GOOGLE_CLIENT_SECRET!,
    };
    const output = lines.join("\n");
    console.log(`captured ${lines.length} log lines of the Worker and its agents (${output.length} characters)`);
    expect(lines.length).toBeGreaterThan(3);
    for (const [name, value] of Object.entries({ ...configured, ...secrets })) {
      expect(value.length, name).toBeGreaterThan(8);
      expect(output.includes(value), `${name} appears in the logs`).toBe(false);
    }
  });
});
