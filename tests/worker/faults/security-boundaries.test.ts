// Guards the boundaries between people and between sites: a model told to reach another person's
// memories through every tool, the HTTP API asked for another person's rows, and cross-site requests to
// every state-changing route (and the agent's WebSocket). Each attempt is checked against what is
// really stored afterwards. Sessions, sign-in links and secrets: security-credentials.test.ts.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { UserAgent } from "../../../agents/user-agent";
import { createLoginToken, type Person } from "../../../db/repositories/auth";
import { callWithEnv, newChatId, newPerson, openLoginLink, sessionCookie, testDatabase, waitForReplies } from "../helpers";
import { scriptedModel, type Step } from "../scripted-model";
import { expectErrorShape, fetchWorker, footprint, newUpdateId, owner, postUpdate, textUpdate } from "./support";
import { ORIGIN, whoIs } from "./security-support";

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
    const source = await one(
      sql`insert into sources (user_id, kind, external_id, payload) values (${person.id}, 'telegram', ${crypto.randomUUID()}, '{"text":"I read Victimbook by Victimauthor"}') returning id`,
    );
    const book = await one(
      sql`insert into entities (user_id, type, name, normalized_name, source_id) values (${person.id}, 'book', 'Victimbook Secret', 'victimbook secret', ${source}) returning id`,
    );
    const author = await one(
      sql`insert into entities (user_id, type, name, normalized_name, source_id) values (${person.id}, 'person', 'Victimauthor Hidden', 'victimauthor hidden', ${source}) returning id`,
    );
    await tx.execute(sql`insert into edges (user_id, from_id, to_id, type) values (${person.id}, ${book}, ${author}, 'written_by')`);
    await tx.execute(
      sql`insert into events (user_id, kind, occurred_at, entity_ids, payload) values (${person.id}, 'reminder', now() + interval '1 day', array[${book}]::uuid[], '{"text":"victim reminder"}')`,
    );
    await tx.execute(sql`insert into facts (user_id, statement) values (${person.id}, 'Victim likes secret things')`);
    await tx.execute(
      sql`insert into oauth_connections (user_id, provider, account_email) values (${person.id}, 'google', ${`${person.id}@victim.example`})`,
    );
    return { book, author };
  });
  return {
    person,
    cookie: await sessionCookie(person),
    ...ids,
    names: ["Victimbook Secret", "Victimauthor Hidden", "victim reminder", "Victim likes secret things"],
  };
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
    instance.messages
      .slice(before)
      .flatMap((m) =>
        m.parts
          .filter((p) => p.type.startsWith("tool-"))
          .map((p) => ({ tool: p.type.slice(5), state: (p as { state?: string }).state, output: (p as { output?: unknown }).output })),
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
    const edges =
      await owner()`select user_id from public.edges where from_id in (${alice.book}, ${alice.author}, ${bobBook}) or to_id in (${alice.book}, ${alice.author}, ${bobBook})`;
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
    const [scheduled] = await scriptedTurn(bob, chatId, [
      { tool: "schedule_create", input: { text: `remind ${alice.person.id} of ${alice.book}`, at } },
    ]);
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
    for (const query of [
      "",
      "?type=book",
      "?type=person",
      "?q=Victimbook",
      "?q=Victimauthor%20Hidden",
      `?q=${alice.book}`,
      "?q=secret&type=book",
      "?limit=200",
    ]) {
      const response = await fetchWorker(`/api/memories${query}`, { headers: { cookie } });
      expect(response.status, query).toBe(200);
      const body = await response.text();
      for (const secret of [alice.book, alice.author, alice.person.id, ...alice.names]) expect(body, query).not.toContain(secret);
    }
    const me = (await (await fetchWorker("/api/me", { headers: { cookie } })).json()) as { id: string };
    expect(me.id).toBe(bob.id);
    expect(await allRowsOf(alice.person.id)).toEqual(before);
  });

  it("the transcript endpoint shows only the signed-in person's own conversation", async () => {
    const chatId = newChatId();
    expect((await postUpdate(textUpdate(chatId, "I read Private Diary"))).status).toBe(200);
    await waitForReplies(chatId, 1);
    const bob = await newPerson("transcript-attacker");
    const transcript = await (await fetchWorker("/api/agent/get-messages", { headers: { cookie: await sessionCookie(bob) } })).text();
    expect(transcript).not.toContain("Private Diary");
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
    for (const [label, headers] of CROSS_SITE)
      await expectRefused(await fetchWorker("/logout", { method: "POST", headers: { cookie, ...headers } }), label);
    expect(await whoIs(cookie.slice("__Host-soma_session=".length))).toBe(person.id);
  });

  it("POST /auth/link/:token: refused, the link is not spent and no session starts", async () => {
    const person = await newPerson("csrf-link");
    const token = await createLoginToken(testDatabase(), person.id, 600);
    for (const [label, headers] of CROSS_SITE)
      await expectRefused(await fetchWorker(`/auth/link/${token}`, { method: "POST", headers }), label);
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
      await expectRefused(
        await fetchWorker(`/api/memories/${alice.book}`, { method: "DELETE", headers: { cookie: alice.cookie, ...headers } }),
        label,
      );
    }
    expect(await allRowsOf(alice.person.id)).toEqual(before);
  });

  it("DELETE /api/account: refused, every row and the conversation stay", async () => {
    const alice = await victim();
    const chat = await fetchWorker("/api/chat", {
      method: "POST",
      headers: { cookie: alice.cookie, origin: ORIGIN, "content-type": "application/json" },
      body: '{"message":"I read Keepsake"}',
    });
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
      const response = await fetchWorker("/api/chat", {
        method: "POST",
        headers: { cookie, "content-type": "application/json", ...headers },
        body: '{"message":"I read Forged Book"}',
      });
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
    const allowed: Array<Record<string, string>> = [
      {},
      { "sec-fetch-site": "same-origin" },
      { "sec-fetch-site": "none" },
      { origin: ORIGIN },
    ];
    for (const headers of allowed) {
      const cookie = await sessionCookie(person);
      const response = await fetchWorker("/logout", { method: "POST", headers: { cookie, ...headers } });
      expect(response.status, JSON.stringify(headers)).toBe(303);
      expect(await whoIs(cookie.slice("__Host-soma_session=".length))).toBeNull();
    }
  });
});
