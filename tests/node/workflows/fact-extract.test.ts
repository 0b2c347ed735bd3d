// fact-extract with @inngest/test: the real function, the offline model's extraction through the AI
// SDK's structured output, facts written under RLS on the test Postgres. The event names the message
// (its kind and external id), never its words: the function reads them from the person's `sources` row,
// where the turn recorded them, and its step outputs and result carry ids and outcomes only.
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { deletePerson } from "../../../db/repositories/auth";
import { correctFact } from "../../../db/repositories/facts";
import { captureEntity, recordMessage, recordSource } from "../../../db/repositories/memory";
import { keptWords, newPerson, runOnce, testDb, testWorkflows } from "./harness";

/** What a turn does after its reply: the message recorded in Postgres, then the event naming it. */
async function turn(userId: string, text: string, messageId = crypto.randomUUID()) {
  const source = { kind: "telegram", externalId: messageId };
  await testDb().withUser(userId, (tx) => recordMessage(tx, userId, source, text));
  return turnEvent(userId, source);
}

function turnEvent(userId: string, source: { kind: string; externalId: string }) {
  return {
    name: "conversation/turn.completed",
    id: `turn-${userId}-${source.externalId}`,
    data: { userId, channel: "telegram", source },
  } as const;
}

/** The current facts' ids, statements and outcomes of a run's result, read back from Postgres (the result has no words). */
async function statementsOf(userId: string, result: unknown) {
  const outcomes = (result as { facts: Array<{ factId: string; outcome: string }> }).facts;
  const rows = (await testDb().withUser(userId, (tx) => tx.execute(sql`select id, statement from facts`))) as unknown as Array<{
    id: string;
    statement: string;
  }>;
  return outcomes.map(({ factId, outcome }) => ({ statement: rows.find((r) => r.id === factId)?.statement, outcome }));
}

async function factsOf(userId: string) {
  return testDb().withUser(
    userId,
    async (tx) =>
      (await tx.execute(
        sql`select statement, subject, category, confidence, superseded_by from facts order by created_at, statement`,
      )) as unknown as Array<{
        statement: string;
        subject: string;
        category: string;
        confidence: number;
        superseded_by: string | null;
      }>,
  );
}

describe("fact-extract", () => {
  it("records the durable claims of a turn, and nothing for a turn without any", async () => {
    const person = await newPerson();
    const { functions } = testWorkflows();
    const run = await runOnce(
      functions.factExtract,
      await turn(person.id, "I live in Berlin. I work at Acme Robotics. I just finished reading Dune."),
    );
    expect(await statementsOf(person.id, run.result)).toEqual([
      { statement: "Lives in Berlin", outcome: "created" },
      { statement: "Works at Acme Robotics", outcome: "created" },
    ]);
    // What Inngest keeps of the run (the result, every step's output) holds ids and outcomes, no words.
    expect(await keptWords(run, /Berlin|Acme|Dune/)).toEqual([]);
    const none = await runOnce(functions.factExtract, await turn(person.id, "which books did I read?"));
    expect(none.result).toEqual({ facts: [] });
    expect((await factsOf(person.id)).map((f) => f.statement)).toEqual(["Lives in Berlin", "Works at Acme Robotics"]);
  });

  it("supersedes a changed claim, reinforces a repeated one, and ignores the same event twice", async () => {
    const person = await newPerson();
    const { factExtract } = testWorkflows().functions;
    await runOnce(factExtract, await turn(person.id, "I live in Berlin."));
    const moved = await turn(person.id, "I moved to Munich.");
    const { result } = await runOnce(factExtract, moved);
    expect(await statementsOf(person.id, result)).toEqual([{ statement: "Lives in Munich", outcome: "superseded" }]);
    const again = await runOnce(factExtract, moved);
    expect(await statementsOf(person.id, again.result)).toEqual([{ statement: "Lives in Munich", outcome: "unchanged" }]);
    const hedged = await runOnce(factExtract, await turn(person.id, "I think I live in Munich."));
    expect(await statementsOf(person.id, hedged.result)).toEqual([{ statement: "Lives in Munich", outcome: "reinforced" }]);

    const facts = await factsOf(person.id);
    expect(facts).toHaveLength(2);
    const [berlin, munich] = facts;
    expect(berlin!.superseded_by).not.toBeNull();
    expect(munich!.superseded_by).toBeNull();
    // 0.9 first, then a hedged 0.5: 0.7 · 0.9 + 0.3 · 0.5 = 0.78.
    expect(munich!.confidence).toBeCloseTo(0.78, 5);
  });

  it("marks extracted facts with when they were told, and a later claim supersedes the person's own correction", async () => {
    const person = await newPerson();
    const { factExtract } = testWorkflows().functions;
    const started = Date.now();
    await runOnce(factExtract, await turn(person.id, "I live in Berlin."));
    const [berlin] = (await testDb().withUser(person.id, (tx) =>
      tx.execute(sql`select f.id, f.origin, f.told_at, s.created_at as source_at from facts f join sources s on s.id = f.source_id`),
    )) as unknown as Array<{ id: string; origin: string; told_at: Date; source_at: Date }>;
    expect(berlin!.origin).toBe("extracted");
    expect(new Date(berlin!.told_at).getTime()).toBeGreaterThanOrEqual(started - 1000);
    expect(Math.abs(new Date(berlin!.told_at).getTime() - new Date(berlin!.source_at).getTime())).toBeLessThan(5000);

    // The person corrects it (fact_correct / PATCH /api/facts/:id), then tells the bot they moved.
    const corrected = await testDb().withUser(person.id, (tx) =>
      correctFact(tx, person.id, berlin!.id, { statement: "Lives in Potsdam", embedding: null, sourceId: null }),
    );
    expect(corrected).toMatchObject({
      outcome: "corrected",
      fact: { statement: "Lives in Potsdam", origin: "correction", subject: "home city" },
    });
    const { result } = await runOnce(factExtract, await turn(person.id, "I moved to Munich."));
    expect(await statementsOf(person.id, result)).toEqual([{ statement: "Lives in Munich", outcome: "superseded" }]);
    const chain = await testDb().withUser(
      person.id,
      async (tx) =>
        (await tx.execute(
          sql`select statement, origin, superseded_by is null as current from facts order by created_at`,
        )) as unknown as Array<{ statement: string; origin: string; current: boolean }>,
    );
    expect(chain).toEqual([
      { statement: "Lives in Berlin", origin: "extracted", current: false },
      { statement: "Lives in Potsdam", origin: "correction", current: false },
      { statement: "Lives in Munich", origin: "extracted", current: true },
    ]);
  });

  it("keeps since when a fact holds, where the person said so, on their clock; a repeat can add it, a move starts afresh", async () => {
    const person = await newPerson({ timezone: "Europe/Berlin" });
    const { factExtract } = testWorkflows().functions;
    const since = async () =>
      (await testDb().withUser(person.id, (tx) =>
        tx.execute(sql`select statement, happened_at, superseded_by is null as current from facts order by statement`),
      )) as unknown as Array<{ statement: string; happened_at: Date | null; current: boolean }>;
    await runOnce(factExtract, await turn(person.id, "I live in Berlin. I work at Acme Robotics since 2020-03."));
    await runOnce(factExtract, await turn(person.id, "I've lived in Berlin since 2019."));
    const rows = await since();
    // Midnight of 1 January 2019 and of 1 March 2020 in Berlin (UTC+1 in winter).
    expect(rows.map((r) => [r.statement, r.happened_at && new Date(r.happened_at).toISOString(), r.current])).toEqual([
      ["Lives in Berlin", "2018-12-31T23:00:00.000Z", true],
      ["Works at Acme Robotics", "2020-02-29T23:00:00.000Z", true],
    ]);
    await runOnce(factExtract, await turn(person.id, "I moved to Lisbon."));
    expect((await since()).find((r) => r.current && r.statement === "Lives in Lisbon")?.happened_at).toBeNull();
  });

  it("drops the words of a message that taught nothing, and keeps those a fact or a memory came from", async () => {
    const person = await newPerson();
    const { factExtract } = testWorkflows().functions;
    const rowOf = async (externalId: string) =>
      (await testDb().withUser(person.id, (tx) =>
        tx.execute(sql`select payload ->> 'text' as text from sources where external_id = ${externalId}`),
      )) as unknown as Array<{ text: string }>;

    const question = await turn(person.id, "which books did I read?");
    await runOnce(factExtract, question);
    expect(await rowOf(question.data.source.externalId)).toEqual([]);

    const told = await turn(person.id, "I live in Berlin.");
    await runOnce(factExtract, told);
    expect(await rowOf(told.data.source.externalId)).toEqual([{ text: "I live in Berlin." }]);

    // A memory the turn's tools captured from the message (no durable fact in it) keeps it as provenance.
    const read = await turn(person.id, "I finished reading Dune.");
    await testDb().withUser(person.id, async (tx) => {
      const sourceId = await recordSource(tx, person.id, read.data.source);
      await captureEntity(tx, person.id, { type: "book", name: "Dune", embedding: null, sourceId });
    });
    expect((await runOnce(factExtract, read)).result).toEqual({ facts: [] });
    expect(await rowOf(read.data.source.externalId)).toEqual([{ text: "I finished reading Dune." }]);
  });

  it("does nothing for a message it cannot find, nor for a person deleted since the turn (their words went with them)", async () => {
    const person = await newPerson();
    const { factExtract } = testWorkflows().functions;
    const missing = await runOnce(factExtract, turnEvent(person.id, { kind: "telegram", externalId: crypto.randomUUID() }));
    expect(missing.error).toBeUndefined();
    expect(missing.result).toEqual({ facts: [] });

    const event = await turn(person.id, "I live in Berlin.");
    await deletePerson(testDb(), person.id);
    const deleted = await runOnce(factExtract, event);
    expect(deleted.error).toBeUndefined();
    expect(deleted.result).toEqual({ facts: [] });
  });

  it("still takes an event queued before events stopped carrying the words (its text), and records its message", async () => {
    const person = await newPerson();
    const source = { kind: "telegram", externalId: crypto.randomUUID() };
    const legacy = { ...turnEvent(person.id, source), data: { ...turnEvent(person.id, source).data, text: "I live in Porto." } };
    const { result, error } = await runOnce(testWorkflows().functions.factExtract, legacy);
    expect(error).toBeUndefined();
    expect(await statementsOf(person.id, result)).toEqual([{ statement: "Lives in Porto", outcome: "created" }]);
    const [row] = (await testDb().withUser(person.id, (tx) =>
      tx.execute(sql`select s.external_id, s.payload ->> 'text' as text from facts f join sources s on s.id = f.source_id`),
    )) as unknown as Array<{ external_id: string; text: string }>;
    expect(row).toEqual({ external_id: source.externalId, text: "I live in Porto." });

    // A deleted person's queued event is dropped, words and all: nothing is recorded again.
    const gone = await newPerson();
    await deletePerson(testDb(), gone.id);
    const late = { ...turnEvent(gone.id, source), data: { ...turnEvent(gone.id, source).data, text: "I live in Porto." } };
    const dropped = await runOnce(testWorkflows().functions.factExtract, late);
    expect(dropped.error).toBeUndefined();
    expect(dropped.result).toEqual({ facts: [] });
  });

  it("rejects bad event data without retrying", async () => {
    const { error } = await runOnce(testWorkflows().functions.factExtract, {
      name: "conversation/turn.completed",
      data: { userId: "not-a-uuid", text: 1 },
    });
    // The SDK validates against the zod schema of the event type; EventValidationError is its
    // NonRetriableError, so bad data is never retried.
    expect(error?.name).toBe("EventValidationError");
    expect(error?.message).toMatch(/userId/);
  });
});
