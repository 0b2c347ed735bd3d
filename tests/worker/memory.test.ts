// Guards memory: capture with provenance and no duplicates, hybrid recall (type lists, prefixes,
// misspellings, archived never returns), and isolation — one person's tools never reach another's
// memories, whatever the model asks for. Tools run in the real AI SDK loop with scripted models.
import { generateText, isStepCount } from "ai";
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { turnTools } from "../../agents/turn/tools/index";
import { localEmbedder } from "../../agents/integrations/model/embeddings";
import type { Person } from "../../db/repositories/auth";
import { normalizeName, type RecalledEntity } from "../../db/repositories/memory";
import { newPerson, testDatabase } from "./helpers";
import { scriptedModel, type Step } from "./scripted-model";

/** Runs one turn of `steps` for `person` and returns every tool result in order. */
async function turn(person: Person, steps: Step[], message = "test message") {
  const result = await generateText({
    model: scriptedModel([...steps, { text: "ok" }]),
    tools: turnTools({
      db: testDatabase(),
      userId: person.id,
      embedder: localEmbedder,
      source: { kind: "test", externalId: crypto.randomUUID(), payload: { text: message } },
    }),
    stopWhen: isStepCount(steps.length + 1),
    prompt: message,
  });
  return result.steps.flatMap((step) => step.toolResults.map((r) => r.output));
}

const capture = (type: string, name: string, properties?: Record<string, unknown>): Step => ({
  tool: "memory_capture",
  input: { type, name, ...(properties ? { properties } : {}) },
});
const recall = (query: string, extra: Record<string, unknown> = {}): Step => ({ tool: "memory_recall", input: { query, ...extra } });

async function recallNames(person: Person, query: string, extra: Record<string, unknown> = {}) {
  const [results] = await turn(person, [recall(query, extra)]);
  return (results as RecalledEntity[]).map((r) => r.entity.name);
}

describe("memory_capture", () => {
  it("stores the entity with the message it came from", async () => {
    const person = await newPerson();
    const [result] = await turn(person, [capture("book", "Dune")], "I just finished reading Dune");
    expect(result).toMatchObject({ created: true });
    const rows = (await testDatabase().withUser(person.id, (tx) =>
      tx.execute(sql`select e.type, e.name, e.normalized_name, s.kind, s.payload ->> 'text' as text
                     from entities e join sources s on s.id = e.source_id`),
    )) as unknown as Array<Record<string, string>>;
    expect(rows).toEqual([{ type: "book", name: "Dune", normalized_name: "dune", kind: "test", text: "I just finished reading Dune" }]);
  });

  it("keeps one row for the same thing told twice, in any case, and merges details", async () => {
    const person = await newPerson();
    const results = await turn(person, [
      capture("book", "Dune"),
      capture("Book", "dune", { author: "Frank Herbert" }),
      capture("book", "“Dune”.", { rating: 5 }),
    ]);
    const ids = new Set(results.map((r) => (r as { entityId: string }).entityId));
    expect(ids.size).toBe(1);
    expect(results.map((r) => (r as { created: boolean }).created)).toEqual([true, false, false]);
    const rows = (await testDatabase().withUser(person.id, (tx) =>
      tx.execute(sql`select name, properties from entities`),
    )) as unknown as unknown[];
    expect(rows).toEqual([{ name: "Dune", properties: { author: "Frank Herbert", rating: 5 } }]);
  });

  it("refuses a malformed type without writing anything", async () => {
    const person = await newPerson();
    const result = await generateText({
      model: scriptedModel([capture("Book; drop table entities", "X"), { text: "ok" }]),
      tools: turnTools({ db: testDatabase(), userId: person.id, embedder: localEmbedder, source: { kind: "test", externalId: "x" } }),
      stopWhen: isStepCount(2),
      prompt: "x",
    });
    const error = result.steps[0]?.content.find((part) => part.type === "tool-error");
    expect(error).toBeDefined();
    const rows = (await testDatabase().withUser(person.id, (tx) => tx.execute(sql`select 1 from entities`))) as unknown as unknown[];
    expect(rows).toHaveLength(0);
  });

  it("refuses a name whose key would not fit the index (it grows under NFKC) as the model's mistake, writing nothing", async () => {
    const person = await newPerson();
    const name = "\ufdfa".repeat(200); // 200 characters; 3,600 once normalized, past btree's 2.7 kB
    const result = await generateText({
      model: scriptedModel([capture("book", name), capture("book", "Dune"), { text: "ok" }]),
      tools: turnTools({ db: testDatabase(), userId: person.id, embedder: localEmbedder, source: { kind: "test", externalId: "nfkc" } }),
      stopWhen: isStepCount(3),
      prompt: "x",
    });
    expect(result.steps[0]?.content.find((part) => part.type === "tool-error")).toMatchObject({
      error: expect.stringMatching(/the name is too long/),
    });
    const rows = (await testDatabase().withUser(person.id, (tx) => tx.execute(sql`select name from entities`))) as unknown as unknown[];
    expect(rows).toEqual([{ name: "Dune" }]);
  });

  it("normalizes names for the uniqueness key", () => {
    expect(normalizeName("  «The  Left Hand of Darkness»! ")).toBe("the left hand of darkness");
    expect(normalizeName("ＤＵＮＥ")).toBe("dune");
  });
});

describe("memory_recall", () => {
  it("lists every active book for a typed question, with no word in common", async () => {
    const person = await newPerson();
    const books = [
      "Dune",
      "Solaris",
      "The Left Hand of Darkness",
      "Neuromancer",
      "Hyperion",
      "Foundation",
      "Ubik",
      "Kindred",
      "Blindsight",
      "Anathem",
      "Piranesi",
      "Accelerando",
    ];
    await turn(person, [...books.map((b) => capture("book", b)), capture("movie", "Arrival"), capture("place", "Lisbon")]);
    const names = await recallNames(person, "which books did I read?", { type: "book", limit: 50 });
    expect(new Set(names)).toEqual(new Set(books));
  });

  it("finds 'Dune Messiah' and 'dune' from 'Dune', ranking the exact name first", async () => {
    const person = await newPerson();
    await turn(person, [
      capture("book", "Dune Messiah"),
      capture("book", "Dune"),
      capture("book", "Children of Time"),
      capture("place", "Dunedin"),
    ]);
    const names = await recallNames(person, "Dune");
    expect(names[0]).toBe("Dune");
    expect(names).toContain("Dune Messiah");
    expect(names).not.toContain("Children of Time");
  });

  it("matches the word still being typed by its beginning, every other short word whole", async () => {
    const person = await newPerson();
    await turn(person, [capture("place", "Red Harbor"), capture("place", "Redwood Lodge"), capture("book", "Dark Harbor")]);
    const byWords = async (query: string) => {
      const [results] = await turn(person, [recall(query)]);
      return (results as RecalledEntity[])
        .filter((r) => r.matchedBy.includes("fulltext"))
        .map((r) => r.entity.name)
        .sort();
    };
    // The last word is a beginning.
    expect(await byWords("harb")).toEqual(["Dark Harbor", "Red Harbor"]);
    expect(await byWords("red")).toEqual(["Red Harbor", "Redwood Lodge"]);
    // An earlier short word is a whole word: "red" is not "redwood".
    expect(await byWords("red harb")).toEqual(["Red Harbor"]);
    expect(await byWords("re harbor")).toEqual([]);
    // A long word matches by its stem wherever it stands ("redwoods" → "redwo").
    expect(await byWords("redwoods lodge")).toEqual(["Redwood Lodge"]);
  });

  it("finds 'Solaris' from the misspelling 'Solaaris', by trigram", async () => {
    const person = await newPerson();
    await turn(person, [capture("book", "Solaris"), capture("book", "Snow Crash")]);
    const [results] = await turn(person, [recall("Solaaris")]);
    const top = (results as RecalledEntity[])[0];
    expect(top?.entity.name).toBe("Solaris");
    expect(top?.matchedBy).toContain("trigram");
  });

  it("returns the source of each memory: why Soma remembers it", async () => {
    const person = await newPerson();
    await turn(person, [capture("place", "Lisbon")], "I visited Lisbon last spring");
    const [results] = await turn(person, [recall("Lisbon")]);
    expect((results as RecalledEntity[])[0]?.source).toMatchObject({ kind: "test", excerpt: "I visited Lisbon last spring" });
  });

  it("never returns a forgotten memory", async () => {
    const person = await newPerson();
    const [captured] = await turn(person, [capture("book", "Dune"), capture("book", "Emma")]);
    const { entityId } = captured as { entityId: string };
    const [forgotten] = await turn(person, [{ tool: "memory_forget", input: { entityId } }]);
    expect(forgotten).toEqual({ archived: true });
    expect(await recallNames(person, "Dune")).toEqual([]);
    expect(await recallNames(person, "books", { type: "book" })).toEqual(["Emma"]);
  });
});

describe("isolation between people", () => {
  it("another person's tools get nothing of Alice's, even asked by name and id", async () => {
    const alice = await newPerson("alice");
    const bob = await newPerson("bob");
    const [captured] = await turn(alice, [capture("book", "Dune")]);
    const { entityId } = captured as { entityId: string };

    expect(await recallNames(bob, "Dune")).toEqual([]);
    expect(await recallNames(bob, "books", { type: "book" })).toEqual([]);
    const results = await turn(bob, [
      { tool: "memory_forget", input: { entityId } },
      { tool: "memory_update", input: { entityId, properties: { stolen: true } } },
      { tool: "memory_relate", input: { fromId: entityId, toId: entityId, type: "likes" } },
    ]);
    expect(results).toEqual([{ archived: false }, { updated: false }, { error: "unknown entity" }]);
    expect(await recallNames(alice, "Dune")).toEqual(["Dune"]);
  });

  it("the tools take no user id: a model cannot name another person", async () => {
    const alice = await newPerson("alice");
    const tools = turnTools({ db: testDatabase(), userId: alice.id, embedder: localEmbedder, source: { kind: "test", externalId: "x" } });
    for (const [name, definition] of Object.entries(tools)) {
      const schema = JSON.stringify((definition.inputSchema as { toJSONSchema?: () => unknown }).toJSONSchema?.() ?? {});
      expect(schema, name).not.toMatch(/user_?id/i);
    }
  });
});

describe("schedule_create and memory_relate", () => {
  it("records a reminder and relates two own entities", async () => {
    const person = await newPerson();
    const at = new Date(Date.now() + 3600_000).toISOString();
    const results = await turn(person, [capture("book", "Dune"), capture("person", "Frank Herbert")]);
    const [book, author] = results as Array<{ entityId: string }>;
    const [related, scheduled] = await turn(person, [
      { tool: "memory_relate", input: { fromId: book!.entityId, toId: author!.entityId, type: "written_by" } },
      { tool: "schedule_create", input: { text: "Return Dune to the library", at } },
    ]);
    expect(related).toMatchObject({ edgeId: expect.any(String) });
    expect(scheduled).toMatchObject({ eventId: expect.any(String) });
    const events = (await testDatabase().withUser(person.id, (tx) =>
      tx.execute(sql`select kind, status, payload ->> 'text' as text from events`),
    )) as unknown as unknown[];
    expect(events).toEqual([{ kind: "reminder", status: "scheduled", text: "Return Dune to the library" }]);
  });
});

void env;
