// Guards issue 19's import limits: POST /api/import (and its dry run) answers a JSON bomb under the byte
// cap, a free-form field too deep or too wide, and a file past a cap with a quick 4xx naming the limit,
// writing nothing and going on serving; message metadata never reaches the agent; an imported date
// cannot lie in the future; and importing again with fresh ids cannot schedule past the reminder cap.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { UserAgent } from "../../agents/user-agent";
import { sqlRows } from "../../db/database";
import { FREE_FORM_LIMITS, SomaImport, type SomaExportV1 } from "../../db/export-format";
import { IMPORT_CAPS } from "../../db/repositories/import-caps";
import { IMPORT_JSON_SHAPE, MAX_IMPORT_BYTES } from "../../worker/routes/export";
import { newPerson, sessionCookie, testDatabase } from "./helpers";
import { exportFileOf, importAs, rowCounts } from "./memory-files";

const PAST = "2024-05-01T10:00:00.000Z";
const FUTURE = "2099-01-01T00:00:00.000Z";

type Row<K extends "sources" | "entities" | "facts" | "edges" | "events"> = SomaExportV1[K][number];

/** A version-1 file holding `rows` (and nothing else). */
const exportFile = (rows: Partial<SomaExportV1> = {}): SomaExportV1 => exportFileOf(rows, PAST);

const entity = (name: string, more: Partial<Row<"entities">> = {}): Row<"entities"> => ({
  id: crypto.randomUUID(),
  type: "book",
  name,
  properties: {},
  status: "active",
  sourceId: null,
  createdAt: PAST,
  updatedAt: PAST,
  ...more,
});

const reminder = (text: string, at: string): Row<"events"> => ({
  id: crypto.randomUUID(),
  kind: "reminder",
  occurredAt: at,
  payload: { text },
  entityIds: [],
  status: "scheduled",
  sourceId: null,
  createdAt: PAST,
});

const source = (externalId: string): Row<"sources"> => ({
  id: crypto.randomUUID(),
  kind: "test",
  externalId,
  payload: {},
  createdAt: PAST,
});

async function signedIn(label: string) {
  const person = await newPerson(label);
  return { person, cookie: await sessionCookie(person) };
}

/** Forgets the imports the person's budget counted (agents/rate-limit.ts): these cases are one request
 * each, not a burst (tests/worker/route-rate-limits.test.ts guards the budget). */
async function freshBudget(userId: string): Promise<void> {
  await runInDurableObject(await getAgentByName(env.UserAgent, userId), (instance: UserAgent) => {
    instance.sql`delete from soma_rate`;
  });
}

async function refusal(response: Response): Promise<{ status: number; code: string; message: string }> {
  const body = (await response.json()) as { error: { code: string; message: string } };
  return { status: response.status, code: body.error.code, message: body.error.message };
}

/** The workflow events named `name` the Inngest stand-in received for the person. */
async function sentEvents(name: string, userId: string): Promise<unknown[]> {
  const events = (await (await fetch(`${env.STAND_IN_URL}/__inngest/events?name=${encodeURIComponent(name)}`)).json()) as Array<{
    data: { userId: string };
  }>;
  return events.filter((e) => e.data.userId === userId);
}

/** "(5,000" → the number as the messages write it. */
const shown = (n: number) => n.toLocaleString("en-US");

describe("finding 1: a bomb under the byte cap", () => {
  it("the byte cap is lower than before, and the shape limits admit a realistic file of the row cap", () => {
    expect(MAX_IMPORT_BYTES).toBeLessThan(10 * 1024 * 1024);
    // A realistic row of an export (pretty-printed, as GET /api/export writes it) holds about 25 values in
    // about 450 bytes: the row cap's worth must fit both limits.
    expect(IMPORT_CAPS.rows * 25).toBeLessThan(IMPORT_JSON_SHAPE.maxNodes);
    expect(IMPORT_CAPS.rows * 450).toBeLessThan(MAX_IMPORT_BYTES);
  });

  it("is refused with 413 before it is parsed, and the next import works", async () => {
    const { person, cookie } = await signedIn("bomb");
    const head = '{"format":"soma-export","version":1,"sources":[';
    for (const item of ["0", "{}", "[]"]) {
      const count = Math.floor((MAX_IMPORT_BYTES - head.length - 10) / (item.length + 1));
      const bomb = `${head}${`${item},`.repeat(count)}${item}]}`;
      expect(bomb.length).toBeLessThan(MAX_IMPORT_BYTES);
      for (const query of ["", "?dryRun=1"]) {
        const refused = await refusal(await importAs(cookie, bomb, {}, query));
        expect(refused).toMatchObject({ status: 413, code: "payload_too_large" });
        expect(refused.message).toContain(`more than ${IMPORT_JSON_SHAPE.maxNodes} values`);
        await freshBudget(person.id);
      }
    }
    const fine = await importAs(cookie, JSON.stringify(exportFile({ entities: [entity("After the bomb")] })));
    expect(fine.status).toBe(200);
    expect(await rowCounts(person.id)).toMatchObject({ entities: 1 });
  });

  it("past the byte cap is 413 however few values it holds", async () => {
    const { cookie } = await signedIn("bytes");
    const refused = await refusal(await importAs(cookie, `"${"x".repeat(MAX_IMPORT_BYTES)}"`));
    expect(refused).toMatchObject({ status: 413, code: "payload_too_large" });
  });
});

describe("finding 1: free-form fields are bounded", () => {
  it("refuses a too-deep, too-wide or too-long properties or payload with 400 naming the path, writing nothing", async () => {
    const { person, cookie } = await signedIn("free-form");
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < FREE_FORM_LIMITS.depth; i++) deep = { a: deep };
    const wide = Object.fromEntries(Array.from({ length: FREE_FORM_LIMITS.keys + 1 }, (_, i) => [`k${i}`, i]));
    const long = Array.from({ length: FREE_FORM_LIMITS.items + 1 }, (_, i) => i);
    const cases: Array<[SomaExportV1, RegExp]> = [
      [exportFile({ entities: [entity("ok"), entity("deep", { properties: deep })] }), /entities\.1\.properties\.a\.a\.a\.a\.a: /],
      [exportFile({ entities: [entity("wide", { properties: wide })] }), /entities\.0\.properties: more than 100 keys/],
      [
        exportFile({ entities: [entity("list", { properties: { aliases: long } })] }),
        /entities\.0\.properties\.aliases: more than 1,000 items/,
      ],
      [
        exportFile({ sources: [{ ...source("long"), payload: { text: "x".repeat(FREE_FORM_LIMITS.chars + 1) } }] }),
        /sources\.0\.payload\.text: longer than 20,000 characters/,
      ],
      [exportFile({ events: [{ ...reminder("deep", PAST), payload: deep }] }), /events\.0\.payload\.a\.a\.a\.a\.a: /],
    ];
    for (const [file, path] of cases) {
      for (const query of ["", "?dryRun=1"]) {
        const refused = await refusal(await importAs(cookie, JSON.stringify(file), {}, query));
        expect(refused.status).toBe(400);
        expect(refused.message).toMatch(path);
        await freshBudget(person.id);
      }
    }
    expect(await rowCounts(person.id)).toEqual({ sources: 0, entities: 0, facts: 0, edges: 0, events: 0 });
  });

  it("drops each message's metadata and all but the words of its parts before the agent is called", async () => {
    const parsed = SomaImport.parse(
      exportFile({
        conversation: [
          {
            id: "m1",
            role: "assistant",
            parts: [
              { type: "tool-memory_recall", toolCallId: "c1", input: { q: "x" }, output: { results: [{ a: 1 }] } },
              { type: "text", text: "Here it is." },
            ],
            metadata: { at: PAST, blob: "x".repeat(1000) },
            createdAt: PAST,
          },
        ],
      }),
    );
    expect(parsed.conversation).toEqual([
      { id: "m1", role: "assistant", parts: [{ type: "tool-memory_recall" }, { type: "text", text: "Here it is." }], createdAt: PAST },
    ]);

    // What the agent's RPC really receives from POST /api/import.
    const { person, cookie } = await signedIn("metadata");
    const received: unknown[] = [];
    const original = UserAgent.prototype.importConversation;
    UserAgent.prototype.importConversation = async function (this: UserAgent, ...args) {
      received.push(args[0]);
      return original.apply(this, args);
    };
    try {
      const file = exportFile({
        conversation: [
          {
            id: "u1",
            role: "user",
            parts: [{ type: "text", text: "I read Dune" }],
            metadata: { blob: "y".repeat(100_000) },
            createdAt: PAST,
          },
        ],
      });
      expect(await (await importAs(cookie, JSON.stringify(file))).json()).toMatchObject({ imported: { messages: 1 } });
    } finally {
      UserAgent.prototype.importConversation = original;
    }
    expect(received).toEqual([[{ id: "u1", role: "user", parts: [{ type: "text", text: "I read Dune" }], createdAt: PAST }]]);
    const agent = await getAgentByName(env.UserAgent, person.id);
    const stored = JSON.parse(await agent.transcript()) as Array<{ metadata: unknown }>;
    expect(stored.map((m) => m.metadata)).toEqual([{ imported: { id: "u1", exportedAt: PAST } }]);
  });
});

describe("finding 2: an imported date cannot lie in the future", () => {
  it("stores every recorded time after now as now, and keeps a reminder's time still to come", async () => {
    const { person, cookie } = await signedIn("dates");
    const src = { ...source("dated"), createdAt: FUTURE };
    const book = entity("Dated Dune", { createdAt: FUTURE, updatedAt: FUTURE, toldAt: FUTURE, sourceId: src.id });
    const other = entity("Dated Herbert", { createdAt: PAST, updatedAt: FUTURE });
    const fact = {
      id: crypto.randomUUID(),
      statement: "Lives in Lisbon",
      category: "location",
      subject: "home",
      confidence: 0.9,
      supersededBy: null,
      sourceId: src.id,
      createdAt: FUTURE,
      updatedAt: FUTURE,
      toldAt: FUTURE,
    };
    const edge = {
      id: crypto.randomUUID(),
      fromId: book.id,
      toId: other.id,
      type: "written_by",
      properties: {},
      validFrom: PAST,
      validTo: null,
      sourceId: null,
      createdAt: FUTURE,
    };
    const due = { ...reminder("call mum", FUTURE), createdAt: FUTURE, toldAt: FUTURE };
    const file = exportFile({
      sources: [src],
      entities: [book, other],
      facts: [fact],
      edges: [edge],
      events: [due],
      conversation: [{ id: "late", role: "user", parts: [{ type: "text", text: "hello from 2099" }], createdAt: FUTURE }],
    });
    const before = Date.now();
    expect((await importAs(cookie, JSON.stringify(file))).status).toBe(200);
    const after = Date.now();

    const times = await testDatabase().withUser(person.id, (tx) =>
      sqlRows<{ t: string; at: Date }>(
        tx,
        sql`select 'sources.created_at' as t, created_at as at from sources
            union all select 'entities.created_at', created_at from entities where name = 'Dated Dune'
            union all select 'entities.updated_at', updated_at from entities
            union all select 'entities.told_at', told_at from entities where name = 'Dated Dune'
            union all select 'facts.created_at', created_at from facts
            union all select 'facts.updated_at', updated_at from facts
            union all select 'facts.told_at', told_at from facts
            union all select 'edges.created_at', created_at from edges
            union all select 'events.created_at', created_at from events
            union all select 'events.told_at', told_at from events`,
      ),
    );
    expect(times).toHaveLength(11);
    for (const { t, at } of times) {
      expect(new Date(at).getTime(), t).toBeGreaterThanOrEqual(before - 1000);
      expect(new Date(at).getTime(), t).toBeLessThanOrEqual(after);
    }
    const [kept] = await testDatabase().withUser(person.id, (tx) =>
      sqlRows<{ occurred_at: Date; created_at: Date }>(tx, sql`select occurred_at, created_at from events`),
    );
    expect(new Date(kept!.occurred_at).toISOString()).toBe(FUTURE);
    // An entity dated in the past keeps its own date.
    const [herbert] = await testDatabase().withUser(person.id, (tx) =>
      sqlRows<{ created_at: Date }>(tx, sql`select created_at from entities where name = 'Dated Herbert'`),
    );
    expect(new Date(herbert!.created_at).toISOString()).toBe(PAST);

    const agent = await getAgentByName(env.UserAgent, person.id);
    const [message] = JSON.parse(await agent.transcript()) as Array<{ createdAt: string }>;
    expect(Date.parse(message!.createdAt)).toBeLessThanOrEqual(after);
  });
});

describe("finding 2: the caps of an import", () => {
  it(`refuses a file of more than ${shown(IMPORT_CAPS.rows)} rows with 413 naming the cap and the number, writing nothing`, async () => {
    const { person, cookie } = await signedIn("rows");
    const rows = IMPORT_CAPS.rows + 1;
    const sources = Array.from({ length: rows - 2 }, (_, i) => source(`s${i}`));
    const file = exportFile({ sources, entities: [entity("one")], events: [reminder("two", PAST)] });
    for (const query of ["?dryRun=1", ""]) {
      const refused = await refusal(await importAs(cookie, JSON.stringify(file), {}, query));
      expect(refused).toMatchObject({ status: 413, code: "payload_too_large" });
      expect(refused.message).toContain(shown(rows));
      expect(refused.message).toContain(shown(IMPORT_CAPS.rows));
    }
    expect(await rowCounts(person.id)).toEqual({ sources: 0, entities: 0, facts: 0, edges: 0, events: 0 });
    // The cap itself is allowed.
    const fits = exportFile({ sources: sources.slice(1), entities: [entity("one")], events: [reminder("two", PAST)] });
    expect((await importAs(cookie, JSON.stringify(fits))).status).toBe(200);
  });

  it(`refuses an import that would bring the person past ${shown(IMPORT_CAPS.memories)} memories and facts, with 409`, async () => {
    const { person, cookie } = await signedIn("full");
    // In statements of 2,000 rows: the embedded Postgres runs one statement at a time for every test file,
    // and one of 20,000 (each name's words and beginnings indexed) held the others' requests for seconds.
    for (let from = 1; from <= IMPORT_CAPS.memories - 2; from += 2000) {
      const to = Math.min(from + 1999, IMPORT_CAPS.memories - 2);
      await testDatabase().withUser(person.id, (tx) =>
        tx.execute(sql`insert into entities (user_id, type, name, normalized_name)
                       select ${person.id}::uuid, 'thing', 'thing ' || g, 'thing ' || g from generate_series(${from}::int, ${to}::int) g`),
      );
    }
    const fact = {
      id: crypto.randomUUID(),
      statement: "Likes tea",
      category: "preference",
      subject: "drink",
      confidence: 0.9,
      supersededBy: null,
      sourceId: null,
      createdAt: PAST,
      updatedAt: PAST,
    };
    const over = exportFile({ entities: [entity("one more"), entity("and another")], facts: [fact] });
    for (const query of ["?dryRun=1", ""]) {
      const refused = await refusal(await importAs(cookie, JSON.stringify(over), {}, query));
      expect(refused).toMatchObject({ status: 409, code: "conflict" });
      expect(refused.message).toContain(shown(IMPORT_CAPS.memories + 1));
      expect(refused.message).toContain(shown(IMPORT_CAPS.memories));
    }
    expect(await rowCounts(person.id)).toMatchObject({ entities: IMPORT_CAPS.memories - 2, facts: 0 });
    // Up to the cap it imports; a file adding nothing new is never refused.
    const fits = exportFile({ entities: [entity("one more")], facts: [fact] });
    expect((await importAs(cookie, JSON.stringify(fits))).status).toBe(200);
    expect((await importAs(cookie, JSON.stringify(fits))).status).toBe(200);
  });

  it("re-importing with fresh ids cannot schedule past the future-reminder cap; past reminders do not count", async () => {
    const { person, cookie } = await signedIn("reminders");
    const count = Math.ceil(IMPORT_CAPS.futureReminders * 0.6);
    const soon = new Date(Date.now() + 86_400_000).toISOString();
    const file = exportFile({
      events: [...Array.from({ length: count }, (_, i) => reminder(`r${i}`, soon)), reminder("long gone", PAST)],
    });
    expect(await (await importAs(cookie, JSON.stringify(file))).json()).toMatchObject({ imported: { events: count + 1 } });
    expect(await sentEvents("schedule/reminder.created", person.id)).toHaveLength(count);

    const fresh = { ...file, events: file.events.map((e) => ({ ...e, id: crypto.randomUUID() })) };
    for (const query of ["?dryRun=1", ""]) {
      const refused = await refusal(await importAs(cookie, JSON.stringify(fresh), {}, query));
      expect(refused).toMatchObject({ status: 409, code: "conflict" });
      expect(refused.message).toContain(shown(2 * count));
      expect(refused.message).toContain(shown(IMPORT_CAPS.futureReminders));
    }
    expect(await rowCounts(person.id)).toMatchObject({ events: count + 1 });
    expect(await sentEvents("schedule/reminder.created", person.id)).toHaveLength(count);
    // The same file again adds nothing and is not refused.
    expect((await importAs(cookie, JSON.stringify(file))).status).toBe(200);
  });
});
