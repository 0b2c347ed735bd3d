// Guards turns re-run after a crash: the person's message was stored, the turn ran partly or fully, no
// reply was recorded, so the agent runs the whole turn again for the same source message. Every write
// is keyed by source message + tool + arguments, so the re-run finds what the first run wrote: one
// reminder (same event id, so the same Inngest event `reminder-<id>`), one edge, one entity, one source.
// A new message may ask for the same reminder again, and another person never meets these keys.
import { generateText, isStepCount } from "ai";
import postgres from "postgres";
import { describe, expect, inject, it } from "vitest";
import { canonicalJson, idempotencyKey } from "../../agents/turn/tools/idempotency";
import { localEmbedder } from "../../agents/integrations/model/embeddings";
import { turnTools as toolsOf } from "../../agents/turn/tools/index";
import type { Person } from "../../db/repositories/auth";
import type { SourceRef } from "../../db/repositories/memory";
import { newPerson, testDatabase } from "./helpers";
import { scriptedModel, type Step } from "./scripted-model";

// The owner's view, for counting what really is in the tables (test code only; the app never does this).
const owner = postgres(inject("databaseUrl"), { max: 2, fetch_types: false, onnotice: () => {} });

async function counts(person: Person): Promise<{ events: number; edges: number; entities: number; sources: number }> {
  const [row] = await owner`
    select (select count(*) from public.events where user_id = ${person.id})::int as events,
           (select count(*) from public.edges where user_id = ${person.id})::int as edges,
           (select count(*) from public.entities where user_id = ${person.id})::int as entities,
           (select count(*) from public.sources where user_id = ${person.id})::int as sources`;
  return row as { events: number; edges: number; entities: number; sources: number };
}

/** A Telegram message as the agent identifies it: chat id and message id. */
function telegramMessage(): SourceRef {
  return { kind: "telegram", externalId: `${Math.floor(Math.random() * 1e9)}:${Math.floor(Math.random() * 1e6)}` };
}

/** The memory tools of one turn, as the agent builds them; `deliveries` records each hand-off to Inngest. */
function turnTools(person: Person, source: SourceRef, deliveries: string[] = []) {
  return toolsOf({
    db: testDatabase(),
    userId: person.id,
    embedder: localEmbedder,
    source,
    scheduleReminder: async ({ eventId }) => {
      deliveries.push(eventId);
      return true;
    },
  });
}

/** Calls one real tool the way the AI SDK loop does after validating the input. */
async function call(tools: ReturnType<typeof toolsOf>, name: string, input: Record<string, unknown>): Promise<Record<string, unknown>> {
  const execute = tools[name]?.execute as ((input: unknown, options: unknown) => Promise<Record<string, unknown>>) | undefined;
  if (!execute) throw new Error(`no tool ${name}`);
  return execute(input, { toolCallId: `call-${name}`, messages: [], context: undefined });
}

const inTwoDays = () => new Date(Date.now() + 2 * 86_400_000).toISOString();

describe("a turn re-run for the same source message", () => {
  it("writes nothing new: same reminder, edge and entity ids, one row each, one source", async () => {
    const person = await newPerson("rerun");
    const source = telegramMessage();
    const at = inTwoDays();
    const deliveries: string[] = [];

    // The whole turn, as the model would call it; then the same turn again after a "crash".
    const runTurn = async () => {
      const tools = turnTools(person, source, deliveries);
      const book = await call(tools, "memory_capture", { type: "book", name: "Dune", properties: { rating: 5 } });
      const author = await call(tools, "memory_capture", { type: "person", name: "Frank Herbert" });
      const related = await call(tools, "memory_relate", { fromId: book.entityId, toId: author.entityId, type: "written_by" });
      const scheduled = await call(tools, "schedule_create", { text: "Return Dune to the library", at });
      return { book, author, related, scheduled };
    };

    const first = await runTurn();
    const second = await runTurn();

    expect(first.book).toMatchObject({ created: true });
    expect(second.book).toEqual({ entityId: first.book.entityId, created: false });
    expect(second.author).toEqual({ entityId: first.author.entityId, created: false });
    expect(first.related).toEqual({ edgeId: expect.any(String) });
    expect(second.related).toEqual(first.related);
    expect(first.scheduled).toEqual({ eventId: expect.any(String) });
    expect(second.scheduled).toEqual(first.scheduled);
    // Both runs hand the same event id to delivery: Inngest deduplicates `reminder-<id>`.
    expect(deliveries).toEqual([first.scheduled.eventId, first.scheduled.eventId]);
    expect(await counts(person)).toEqual({ events: 1, edges: 1, entities: 2, sources: 1 });
  });

  it("keeps one reminder when the re-run spells the same instant in another offset", async () => {
    const person = await newPerson("rerun-offset");
    const source = telegramMessage();
    const first = await call(turnTools(person, source), "schedule_create", { text: "Call mum", at: "2031-03-01T09:00:00+02:00" });
    const second = await call(turnTools(person, source), "schedule_create", { text: "Call mum", at: "2031-03-01T07:00:00Z" });
    expect(second).toEqual(first);
    expect((await counts(person)).events).toBe(1);
  });

  it("creates the reminder again for a different source message: a person can ask twice", async () => {
    const person = await newPerson("asks-twice");
    const at = inTwoDays();
    const reminder = { text: "Water the plants", at };
    const message = telegramMessage();
    const first = await call(turnTools(person, message), "schedule_create", reminder);
    const rerun = await call(turnTools(person, message), "schedule_create", reminder);
    expect(rerun).toEqual(first);
    expect(await counts(person)).toMatchObject({ events: 1, sources: 1 });

    const again = await call(turnTools(person, telegramMessage()), "schedule_create", reminder);
    expect(again).toEqual({ eventId: expect.any(String) });
    expect(again.eventId).not.toBe(first.eventId);
    expect(await counts(person)).toMatchObject({ events: 2, sources: 2 });
  });

  it("another person with the same source and arguments gets their own rows, never the first person's", async () => {
    const alice = await newPerson("alice");
    const bob = await newPerson("bob");
    const source = telegramMessage(); // the same chat:message pair, as two accounts could never really share
    const reminder = { text: "Dentist", at: inTwoDays() };

    const aliceEvent = await call(turnTools(alice, source), "schedule_create", reminder);
    const bobEvent = await call(turnTools(bob, source), "schedule_create", reminder);
    const bobRerun = await call(turnTools(bob, source), "schedule_create", reminder);
    expect(bobEvent.eventId).not.toBe(aliceEvent.eventId);
    expect(bobRerun).toEqual(bobEvent);

    // The same relation arguments: Bob's run cannot reach Alice's entities or her edge.
    const aliceTools = turnTools(alice, source);
    const book = await call(aliceTools, "memory_capture", { type: "book", name: "Dune" });
    const author = await call(aliceTools, "memory_capture", { type: "person", name: "Frank Herbert" });
    const relation = { fromId: book.entityId, toId: author.entityId, type: "written_by" };
    const aliceEdge = await call(aliceTools, "memory_relate", relation);
    expect(await call(turnTools(bob, source), "memory_relate", relation)).toEqual({ error: "unknown entity" });
    expect(await call(turnTools(alice, source), "memory_relate", relation)).toEqual(aliceEdge);

    expect(await counts(alice)).toEqual({ events: 1, edges: 1, entities: 2, sources: 1 });
    expect(await counts(bob)).toEqual({ events: 1, edges: 0, entities: 0, sources: 1 });
    const [keys] = await owner`
      select count(distinct user_id)::int as people, count(*)::int as rows,
             count(distinct idempotency_key)::int as keys
      from public.events where user_id in (${alice.id}, ${bob.id})`;
    // Equal keys, one row per person: the unique index is per user_id.
    expect(keys).toEqual({ people: 2, rows: 2, keys: 1 });
  });
});

describe("a turn re-run through the AI SDK tool loop", () => {
  it("a crashed turn and two full re-runs leave one reminder, one edge, one entity per thing, one source", async () => {
    const person = await newPerson("loop");
    // The two entities exist from an earlier message, so the scripted turn can name their ids.
    const earlier = turnTools(person, telegramMessage());
    const book = await call(earlier, "memory_capture", { type: "book", name: "Dune" });
    const author = await call(earlier, "memory_capture", { type: "person", name: "Frank Herbert" });

    const source = telegramMessage();
    const at = inTwoDays();
    const turn: Step[] = [
      { tool: "memory_capture", input: { type: "book", name: "Dune", properties: { finished: true } } },
      { tool: "memory_relate", input: { fromId: book.entityId, toId: author.entityId, type: "written_by" } },
      { tool: "schedule_create", input: { text: "Lend Dune to Sam", at } },
      { text: "Noted, and I'll remind you." },
    ];
    const deliveries: string[] = [];
    const run = (steps: Step[]) =>
      generateText({
        model: scriptedModel(steps),
        tools: turnTools(person, source, deliveries),
        stopWhen: isStepCount(steps.length),
        maxRetries: 0,
        prompt: "I finished Dune, Frank Herbert wrote it; remind me to lend it to Sam",
      });
    const outputs = (result: Awaited<ReturnType<typeof run>>) => result.steps.flatMap((step) => step.toolResults.map((r) => r.output));

    // The first run dies after the relation (the model call for the reminder fails: the isolate is gone).
    await expect(run([turn[0]!, turn[1]!, { fail: "isolate restarted" }])).rejects.toThrow();
    expect(await counts(person)).toEqual({ events: 0, edges: 1, entities: 2, sources: 2 });

    const rerun = outputs(await run(turn));
    const again = outputs(await run(turn));
    expect(rerun).toEqual([{ entityId: book.entityId, created: false }, { edgeId: expect.any(String) }, { eventId: expect.any(String) }]);
    expect(again).toEqual(rerun);
    expect(deliveries).toEqual([(rerun[2] as { eventId: string }).eventId, (rerun[2] as { eventId: string }).eventId]);
    expect(await counts(person)).toEqual({ events: 1, edges: 1, entities: 2, sources: 2 });
  });
});

describe("idempotency keys", () => {
  it("are SHA-256 hex of source, tool and canonical arguments: key order does not matter, every part does", async () => {
    const source = { kind: "telegram", externalId: "1:2" };
    const key = await idempotencyKey(source, "memory_relate", { fromId: "a", toId: "b", type: "x" });
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(await idempotencyKey(source, "memory_relate", { type: "x", toId: "b", fromId: "a" })).toBe(key);
    expect(await idempotencyKey({ kind: "telegram", externalId: "1:3" }, "memory_relate", { fromId: "a", toId: "b", type: "x" })).not.toBe(
      key,
    );
    expect(await idempotencyKey({ kind: "web", externalId: "1:2" }, "memory_relate", { fromId: "a", toId: "b", type: "x" })).not.toBe(key);
    expect(await idempotencyKey(source, "schedule_create", { fromId: "a", toId: "b", type: "x" })).not.toBe(key);
    expect(await idempotencyKey(source, "memory_relate", { fromId: "b", toId: "a", type: "x" })).not.toBe(key);
    expect(canonicalJson({ b: { d: 1, c: [2, { f: 3, e: undefined }] }, a: null })).toBe('{"a":null,"b":{"c":[2,{"f":3}],"d":1}}');
  });
});
