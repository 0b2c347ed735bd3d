// memory-consolidate with @inngest/test: near-duplicate entities merged into the older one on the test
// Postgres, under RLS, and memories stored without an embedding given the one their writer would have
// stored (all of a person's after an import, a bounded number a night). The nightly job walks everyone;
// Postgres is shared with test files running in parallel, so full runs have their "people" step mocked
// to this test's people (a real run would merge other files' entities under their feet) and the real
// listing is checked alone with executeStep.
import { InngestTestEngine } from "@inngest/test";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { localEmbedder, type Embedder } from "../../../agents/integrations/model/embeddings";
import { EMBED_BATCH, NIGHTLY_EMBED_LIMIT } from "../../../agents/workflows/functions/memory-consolidate";
import { EMBEDDING_DIMENSIONS } from "../../../db/schema";
import { exportMemory, importMemory } from "../../../db/repositories/export";
import { recordFact } from "../../../db/repositories/facts";
import { archiveEntity, captureEntity, recordSource, relateEntities } from "../../../db/repositories/memory";
import { recallEntities, vectorLiteral } from "../../../db/repositories/recall";
import { missingEmbeddings, storeEmbeddings } from "../../../db/repositories/embeddings";
import { langfuseEvents, newPerson, runOnce, testDb, testWorkflows } from "./harness";

const DAY = 86_400_000;

interface EntityRow {
  id: string;
  type: string;
  name: string;
  properties: Record<string, unknown>;
  source_id: string | null;
  updated_at: string | Date;
}

interface MergeOutput {
  people: number;
  embedded: number;
  merged: Array<{ userId: string; keptId: string; mergedId: string; type: string; kept: string; merged: string }>;
}

/** The embedding memory_capture stores for an entity (agents/turn/tools/memory-tools.ts), from the workflows' embedder. */
async function captureEmbedding(type: string, name: string): Promise<number[]> {
  return (await localEmbedder.embed([`${type}: ${name}`]))[0]!;
}

/**
 * One entity with its own source, in its own transaction (created_at orders them: the first is older),
 * embedded as memory_capture embeds it unless `embedding` says otherwise (null: stored without one).
 */
async function capture(userId: string, type: string, name: string, options: { properties?: Record<string, unknown>; embedding?: number[] | null } = {}) {
  const embedding = options.embedding === undefined ? await captureEmbedding(type, name) : options.embedding;
  return testDb().withUser(userId, async (tx) => {
    const sourceId = await recordSource(tx, userId, { kind: "telegram", externalId: `msg-${crypto.randomUUID()}`, payload: { text: `about ${name}` } });
    const { entityId } = await captureEntity(tx, userId, { type, name, properties: options.properties ?? {}, embedding, sourceId });
    return { id: entityId, sourceId };
  });
}

/** A fact stored without an embedding (as when the embedder failed); `subject` makes a later one supersede it. */
async function factWithoutEmbedding(userId: string, statement: string, subject = "") {
  return testDb().withUser(userId, async (tx) => {
    const { factId } = await recordFact(tx, userId, { statement, category: "general", subject, confidence: 0.8, embedding: null, sourceId: null });
    return factId;
  });
}

function unitVector(axis: number): number[] {
  const v = new Array<number>(EMBEDDING_DIMENSIONS).fill(0);
  v[axis] = 1;
  return v;
}

async function entitiesOf(userId: string): Promise<EntityRow[]> {
  return (await testDb().withUser(userId, (tx) =>
    tx.execute(sql`select id, type, name, properties, source_id, updated_at from entities order by type, name, created_at`),
  )) as unknown as EntityRow[];
}

/** A uuid[] column as the driver returns it (parsed, or Postgres's text form "{a,b}"). */
const uuids = (value: string[] | string) => (Array.isArray(value) ? value : value.replace(/^\{|\}$/g, "").split(",").filter(Boolean));

const names = (rows: EntityRow[]) => rows.map((r) => `${r.type}:${r.name}`);

interface EmbeddingRow {
  id: string;
  embedding: string | null;
  updated_at: string | Date;
}

/** Every entity and fact of the person, with its embedding in pgvector's text form (or null). */
async function embeddingsOf(userId: string): Promise<{ entities: EmbeddingRow[]; facts: EmbeddingRow[] }> {
  return testDb().withUser(userId, async (tx) => ({
    entities: (await tx.execute(sql`select id, embedding::text as embedding, updated_at from entities order by id`)) as unknown as EmbeddingRow[],
    facts: (await tx.execute(sql`select id, embedding::text as embedding, updated_at from facts order by id`)) as unknown as EmbeddingRow[],
  }));
}

/** Whether the row's stored embedding is exactly `expected` (both as pgvector stores them: float4). */
async function storedEmbeddingIs(userId: string, table: "entities" | "facts", id: string, expected: number[]): Promise<boolean> {
  const [row] = (await testDb().withUser(userId, (tx) =>
    tx.execute(sql`select embedding = ${vectorLiteral(expected)}::vector as same from ${sql.raw(table)} where id = ${id}`),
  )) as unknown as Array<{ same: boolean | null }>;
  return row?.same === true;
}

/** An embedder whose service is down. */
const failingEmbedder: Embedder = {
  name: "down",
  embed: async () => {
    throw new Error("embeddings service down for the test");
  },
};

/** The event the cron trigger starts a run with (@inngest/test would otherwise mock a function.invoked one). */
const nightly = { name: "inngest/scheduled.timer", data: { cron: "TZ=UTC 30 3 * * *" } } as const;

/** The event POST /api/import emits after adding memories. */
const imported = (userId: string) => ({ name: "memory/imported", data: { userId } }) as const;

/** Names of the step.run calls a run made (the spies of @inngest/test). */
function stepsRun(ctx: { step: { run: unknown } }): string[] {
  return (ctx.step.run as { mock: { calls: Array<[string, ...unknown[]]> } }).mock.calls.map(([id]) => id);
}

/** A full run over exactly these people (a fresh steps array per run: @inngest/test appends to it). */
async function consolidate(people: string[], now?: Date) {
  const { result, error, ctx } = await runOnce(testWorkflows(now ? { now } : {}).functions.memoryConsolidate, nightly, {
    steps: [{ id: "people", handler: () => people }],
  });
  expect(error).toBeUndefined();
  return { output: result as MergeOutput, ctx };
}

describe("memory-consolidate", () => {
  it("merges a near-duplicate into the older entity: alias, properties, source, edges and events follow", async () => {
    const person = await newPerson();
    const hobbit = await capture(person.id, "book", "The Hobbit", { properties: { rating: 5, author: "J.R.R. Tolkien" } });
    const tolkien = await capture(person.id, "person", "J.R.R. Tolkien");
    const shire = await capture(person.id, "place", "The Shire");
    const dup = await capture(person.id, "book", "Hobbit", { properties: { author: "Tolkien", pages: 310 } });
    const edges = await testDb().withUser(person.id, async (tx) => ({
      wrote: await relateEntities(tx, person.id, { fromId: tolkien.id, toId: dup.id, type: "wrote", sourceId: dup.sourceId }),
      setIn: await relateEntities(tx, person.id, { fromId: dup.id, toId: shire.id, type: "set_in", sourceId: null }),
    }));
    const [event] = (await testDb().withUser(person.id, (tx) =>
      tx.execute(sql`insert into events (user_id, kind, occurred_at, payload, entity_ids)
                     values (${person.id}, 'note', now(), '{"text":"finished the Hobbit"}', array[${tolkien.id}, ${dup.id}]::uuid[]) returning id`),
    )) as unknown as Array<{ id: string }>;

    const { output } = await consolidate([person.id]);
    expect(output).toEqual({
      people: 1,
      embedded: 0,
      merged: [{ userId: person.id, keptId: hobbit.id, mergedId: dup.id, type: "book", kept: "The Hobbit", merged: "Hobbit" }],
    });

    const rows = await entitiesOf(person.id);
    expect(names(rows)).toEqual(["book:The Hobbit", "person:J.R.R. Tolkien", "place:The Shire"]);
    const kept = rows.find((r) => r.id === hobbit.id)!;
    // The survivor's own values win; the merged one's fill the gaps.
    expect(kept.properties).toEqual({ rating: 5, author: "J.R.R. Tolkien", pages: 310, aliases: ["Hobbit"], mergedSources: [dup.sourceId] });
    expect(kept.source_id).toBe(hobbit.sourceId);

    const after = await testDb().withUser(person.id, async (tx) => ({
      edges: (await tx.execute(sql`select id, from_id, to_id, type from edges order by type`)) as unknown as Array<{ id: string; from_id: string; to_id: string; type: string }>,
      event: ((await tx.execute(sql`select entity_ids from events where id = ${event!.id}`)) as unknown as Array<{ entity_ids: string[] | string }>)[0],
      sources: (await tx.execute(sql`select id from sources where id = ${dup.sourceId}`)) as unknown as unknown[],
    }));
    expect(after.edges).toEqual([
      { id: edges.setIn, from_id: hobbit.id, to_id: shire.id, type: "set_in" },
      { id: edges.wrote, from_id: tolkien.id, to_id: hobbit.id, type: "wrote" },
    ]);
    expect(uuids(after.event!.entity_ids)).toEqual([tolkien.id, hobbit.id]);
    expect(after.sources).toHaveLength(1); // provenance rows are never touched
  });

  it("keeps different things with similar names apart: Dune / Dune Messiah, sequels, other types", async () => {
    const person = await newPerson();
    await capture(person.id, "book", "Dune");
    await capture(person.id, "book", "Dune Messiah");
    await capture(person.id, "movie", "Rocky II");
    await capture(person.id, "movie", "Rocky III");
    await capture(person.id, "movie", "Rocky");
    await capture(person.id, "movie", "Dune"); // the same name as the book, another type
    await capture(person.id, "movie", "The Dune"); // …and this one's twin is a movie, not the book
    await capture(person.id, "book", "Harry Potter 2");
    await capture(person.id, "book", "Harry Potter 3");
    const before = await entitiesOf(person.id);

    const { output } = await consolidate([person.id]);
    const rows = await entitiesOf(person.id);
    expect(output.merged.map((m) => `${m.type}:${m.merged}→${m.kept}`)).toEqual(["movie:The Dune→Dune"]);
    expect(names(rows)).toEqual(["book:Dune", "book:Dune Messiah", "book:Harry Potter 2", "book:Harry Potter 3", "movie:Dune", "movie:Rocky", "movie:Rocky II", "movie:Rocky III"]);
    // Nothing but the one merge touched the rest.
    for (const row of rows.filter((r) => r.name !== "Dune" || r.type !== "movie")) {
      expect(row).toEqual(before.find((b) => b.id === row.id));
    }
  });

  it("merges spelling variants only when trigrams and (when present) embeddings agree", async () => {
    const person = await newPerson();
    const same = unitVector(1);
    // Trigram similarity 0.76 and identical embeddings: one writer.
    const dostoevsky = await capture(person.id, "person", "Fyodor Dostoevsky", { embedding: same });
    await capture(person.id, "person", "Fyodor Dostoyevsky", { embedding: same });
    // Trigram similarity 0.88, but the embeddings say these are unrelated: kept apart.
    await capture(person.id, "book", "The Fellowship of the Ring", { embedding: unitVector(2) });
    await capture(person.id, "book", "Fellowship of the Rings", { embedding: unitVector(3) });
    // Accents, apostrophes and leading articles do not make a different name, whatever the trigrams say.
    const marquez = await capture(person.id, "person", "Gabriel García Márquez");
    await capture(person.id, "person", "Gabriel Garcia Marquez");
    const stone = await capture(person.id, "book", "Harry Potter and the Philosopher's Stone");
    await capture(person.id, "book", "Harry Potter and the Philosophers Stone");
    // Trigram similarity 0.71, below the bar: kept apart.
    await capture(person.id, "person", "Katherine Johnson");
    await capture(person.id, "person", "Katharine Johnson");

    const { output } = await consolidate([person.id]);
    expect(output.merged.map((m) => [m.kept, m.merged]).sort()).toEqual([
      ["Fyodor Dostoevsky", "Fyodor Dostoyevsky"],
      ["Gabriel García Márquez", "Gabriel Garcia Marquez"],
      ["Harry Potter and the Philosopher's Stone", "Harry Potter and the Philosophers Stone"],
    ]);
    expect(new Set(output.merged.map((m) => m.keptId))).toEqual(new Set([dostoevsky.id, marquez.id, stone.id]));
    expect(names(await entitiesOf(person.id))).toEqual([
      "book:Fellowship of the Rings",
      "book:Harry Potter and the Philosopher's Stone",
      "book:The Fellowship of the Ring",
      "person:Fyodor Dostoevsky",
      "person:Gabriel García Márquez",
      "person:Katharine Johnson",
      "person:Katherine Johnson",
    ]);
  });

  it("merges nothing more on a second run, and merges a name captured again after a merge without a second alias", async () => {
    const person = await newPerson();
    const hobbit = await capture(person.id, "book", "The Hobbit");
    const first = await capture(person.id, "book", "Hobbit");
    expect((await consolidate([person.id])).output.merged).toHaveLength(1);
    const once = await entitiesOf(person.id);

    const again = await consolidate([person.id]);
    expect(again.output).toEqual({ people: 1, embedded: 0, merged: [] });
    expect(await entitiesOf(person.id)).toEqual(once);

    // "Hobbit" said again the next day is a new row (capture dedupes by name, not by alias)…
    const second = await capture(person.id, "book", "Hobbit");
    expect(second.id).not.toBe(first.id);
    const third = await consolidate([person.id]);
    expect(third.output.merged).toEqual([{ userId: person.id, keptId: hobbit.id, mergedId: second.id, type: "book", kept: "The Hobbit", merged: "Hobbit" }]);
    const [kept] = await entitiesOf(person.id);
    // …and merging it again lists the alias once, and both of the merged sources.
    expect(kept!.properties).toEqual({ aliases: ["Hobbit"], mergedSources: [first.sourceId, second.sourceId] });
  });

  it("keeps the aliases and merged sources the merged entity already had", async () => {
    const person = await newPerson();
    const earlier = crypto.randomUUID();
    const hobbit = await capture(person.id, "book", "The Hobbit", { properties: { aliases: ["Der kleine Hobbit"] } });
    const dup = await capture(person.id, "book", "Hobbit", { properties: { aliases: ["There and Back Again"], mergedSources: [earlier] } });
    await consolidate([person.id]);
    const [kept] = await entitiesOf(person.id);
    expect(kept!.id).toBe(hobbit.id);
    expect(kept!.properties).toEqual({ aliases: ["Der kleine Hobbit", "There and Back Again", "Hobbit"], mergedSources: [earlier, dup.sourceId] });
  });

  it("never merges across people, and leaves other people's entities untouched", async () => {
    const alice = await newPerson();
    const bob = await newPerson();
    const carol = await newPerson();
    const bobsHobbit = await capture(bob.id, "book", "The Hobbit"); // older than Alice's
    const alicesHobbit = await capture(alice.id, "book", "Hobbit");
    const alicesDune = await capture(alice.id, "book", "Dune");
    const bobsDup = await capture(bob.id, "book", "Hobbit");
    // Carol has duplicates too, but is not among the people this run walks.
    await capture(carol.id, "book", "The Hobbit");
    await capture(carol.id, "book", "Hobbit");
    const aliceBefore = await entitiesOf(alice.id);
    const carolBefore = await entitiesOf(carol.id);

    const { output } = await consolidate([alice.id, bob.id]);
    expect(output).toEqual({
      people: 2,
      embedded: 0,
      merged: [{ userId: bob.id, keptId: bobsHobbit.id, mergedId: bobsDup.id, type: "book", kept: "The Hobbit", merged: "Hobbit" }],
    });
    expect(await entitiesOf(alice.id)).toEqual(aliceBefore);
    expect((await entitiesOf(alice.id)).map((r) => r.id).sort()).toEqual([alicesHobbit.id, alicesDune.id].sort());
    expect(await entitiesOf(carol.id)).toEqual(carolBefore);
    const bobs = await entitiesOf(bob.id);
    expect(bobs.map((r) => r.id)).toEqual([bobsHobbit.id]);
    expect(bobs[0]!.properties).toEqual({ aliases: ["Hobbit"], mergedSources: [bobsDup.sourceId] });
  });

  it("only looks at entities touched in the last two days", async () => {
    const person = await newPerson();
    await capture(person.id, "book", "The Hobbit");
    await capture(person.id, "book", "Hobbit");
    // Three days on, neither was touched within the lookback window.
    const { output } = await consolidate([person.id], new Date(Date.now() + 3 * DAY));
    expect(output.merged).toEqual([]);
    expect(names(await entitiesOf(person.id))).toEqual(["book:Hobbit", "book:The Hobbit"]);
  });

  it("walks everyone (the real listing, run alone) and traces the run tagged workflow + memory-consolidate", async () => {
    const withChat = await newPerson({ telegram: true });
    const withoutChat = await newPerson();
    const { result } = await new InngestTestEngine({ function: testWorkflows().functions.memoryConsolidate }).executeStep("people", { events: [nightly] });
    expect(result).toEqual(expect.arrayContaining([withChat.id, withoutChat.id]));

    const person = await newPerson();
    await capture(person.id, "book", "The Hobbit");
    await capture(person.id, "book", "Hobbit");
    const { deps, functions } = testWorkflows();
    const { result: output, ctx } = await runOnce(functions.memoryConsolidate, nightly, { steps: [{ id: "people", handler: () => [person.id] }] });
    expect((output as MergeOutput).merged).toHaveLength(1);
    await deps.tracer.flush(); // the serve handler's per-request flush does not run under @inngest/test
    const trace = (await langfuseEvents()).filter((e) => e.type === "trace-create" && e.body.id === ctx.runId);
    expect(trace[0]?.body).toMatchObject({ name: "memory-consolidate", tags: ["workflow", "memory-consolidate"] });
    expect(trace[0]?.body.userId).toBeUndefined(); // a cron run is nobody's
    expect(trace.some((t) => JSON.stringify(t.body.output ?? null).includes(`"mergedId"`))).toBe(true);
  });
});

describe("memory-consolidate: missing embeddings", () => {
  it("on memory/imported embeds the person's active entities and current facts as their writers would, and nothing else", async () => {
    const person = await newPerson();
    const other = await newPerson();
    const dune = await capture(person.id, "book", "Dune", { embedding: null });
    const herbert = await capture(person.id, "person", "Frank Herbert", { embedding: null });
    const lisbon = await capture(person.id, "place", "Lisbon", { embedding: null });
    await testDb().withUser(person.id, (tx) => archiveEntity(tx, lisbon.id));
    const alien = await capture(person.id, "movie", "Alien"); // already embedded
    const berlin = await factWithoutEmbedding(person.id, "Lives in Berlin", "home city");
    const munich = await factWithoutEmbedding(person.id, "Lives in Munich", "home city"); // supersedes Berlin
    const vegetarian = await factWithoutEmbedding(person.id, "Is vegetarian");
    await capture(other.id, "book", "Dune", { embedding: null });
    await factWithoutEmbedding(other.id, "Lives in Rome");
    const othersBefore = await embeddingsOf(other.id);
    const alienBefore = (await embeddingsOf(person.id)).entities.find((e) => e.id === alien.id);

    const { result, error } = await runOnce(testWorkflows().functions.memoryConsolidate, imported(person.id));
    expect(error).toBeUndefined();
    expect(result).toEqual({ people: 1, embedded: 4, merged: [] });

    expect(await storedEmbeddingIs(person.id, "entities", dune.id, await captureEmbedding("book", "Dune"))).toBe(true);
    expect(await storedEmbeddingIs(person.id, "entities", herbert.id, await captureEmbedding("person", "Frank Herbert"))).toBe(true);
    // A fact is embedded by its statement, as fact-extract embeds it.
    expect(await storedEmbeddingIs(person.id, "facts", munich, (await localEmbedder.embed(["Lives in Munich"]))[0]!)).toBe(true);
    expect(await storedEmbeddingIs(person.id, "facts", vegetarian, (await localEmbedder.embed(["Is vegetarian"]))[0]!)).toBe(true);
    const after = await embeddingsOf(person.id);
    expect(after.entities.find((e) => e.id === lisbon.id)?.embedding).toBeNull(); // archived
    expect(after.facts.find((f) => f.id === berlin)?.embedding).toBeNull(); // superseded
    expect(after.entities.find((e) => e.id === alien.id)).toEqual(alienBefore);
    expect(await embeddingsOf(other.id)).toEqual(othersBefore);
  });

  it("on memory/imported works through a large import one batch a step, then merges the person's near-duplicates", async () => {
    const person = await newPerson();
    const count = EMBED_BATCH + 20;
    await testDb().withUser(person.id, async (tx) => {
      for (let i = 0; i < count; i++) {
        await captureEntity(tx, person.id, { type: "note", name: crypto.randomUUID(), embedding: null, sourceId: null });
      }
    });
    const hobbit = await capture(person.id, "book", "The Hobbit", { embedding: null });
    const dup = await capture(person.id, "book", "Hobbit", { embedding: null });

    const { result, error, ctx } = await runOnce(testWorkflows().functions.memoryConsolidate, imported(person.id));
    expect(error).toBeUndefined();
    expect(result).toEqual({
      people: 1,
      embedded: count + 2,
      merged: [{ userId: person.id, keptId: hobbit.id, mergedId: dup.id, type: "book", kept: "The Hobbit", merged: "Hobbit" }],
    });
    expect(stepsRun(ctx)).toEqual(["embed-0", "embed-1", "merge"]);
    expect((await embeddingsOf(person.id)).entities.filter((e) => e.embedding === null)).toEqual([]);
  });

  it("makes an imported memory findable by vector recall once the backfill ran", async () => {
    const source = await newPerson();
    await capture(source.id, "book", "Dune");
    const file = await testDb().withUser(source.id, (tx) => exportMemory(tx));
    const person = await newPerson();
    await testDb().withUser(person.id, (tx) => importMemory(tx, person.id, file));
    const query = { query: "Dune", limit: 5, embedding: (await localEmbedder.embed(["Dune"]))[0]! };
    const recall = () => testDb().withUser(person.id, (tx) => recallEntities(tx, person.id, query));

    const before = await recall();
    expect(before.map((r) => r.entity.name)).toEqual(["Dune"]);
    expect(before[0]!.matchedBy).not.toContain("vector"); // an import stores no embeddings

    const { error } = await runOnce(testWorkflows().functions.memoryConsolidate, imported(person.id));
    expect(error).toBeUndefined();
    const after = await recall();
    expect(after.map((r) => r.entity.name)).toEqual(["Dune"]);
    expect(after[0]!.matchedBy).toContain("vector");
  });

  it("embeds up to its bound per person a night, and the rest the next night", async () => {
    const person = await newPerson();
    await testDb().withUser(person.id, async (tx) => {
      for (let i = 0; i < NIGHTLY_EMBED_LIMIT + 3; i++) {
        await captureEntity(tx, person.id, { type: "note", name: crypto.randomUUID(), embedding: null, sourceId: null });
      }
    });
    const fact = await factWithoutEmbedding(person.id, "Works at Acme"); // the newest: left for the next night

    const first = await consolidate([person.id]);
    expect(first.output).toEqual({ people: 1, embedded: NIGHTLY_EMBED_LIMIT, merged: [] });
    const missing = await embeddingsOf(person.id);
    expect(missing.entities.filter((e) => e.embedding === null)).toHaveLength(3);
    expect(missing.facts.find((f) => f.id === fact)?.embedding).toBeNull();

    const second = await consolidate([person.id]);
    expect(second.output).toEqual({ people: 1, embedded: 4, merged: [] });
    const none = await embeddingsOf(person.id);
    expect([...none.entities, ...none.facts].filter((r) => r.embedding === null)).toEqual([]);
  });

  it("an import's run fails its step and stores nothing when the embedder fails (Inngest retries it); the night still merges", async () => {
    const person = await newPerson();
    await capture(person.id, "book", "Dune", { embedding: null });
    await factWithoutEmbedding(person.id, "Lives in Lisbon");
    const hobbit = await capture(person.id, "book", "The Hobbit");
    const dup = await capture(person.id, "book", "Hobbit");
    const before = await embeddingsOf(person.id);
    const { functions } = testWorkflows({ embedder: failingEmbedder });

    const onImport = await runOnce(functions.memoryConsolidate, imported(person.id));
    expect(onImport.result).toBeUndefined();
    expect(onImport.error?.message).toMatch(/embeddings service down for the test/);
    expect(onImport.error?.name).not.toBe("NonRetriableError");
    expect(await embeddingsOf(person.id)).toEqual(before);

    const nightlyRun = await runOnce(functions.memoryConsolidate, nightly, { steps: [{ id: "people", handler: () => [person.id] }] });
    expect(nightlyRun.error).toBeUndefined();
    expect(nightlyRun.result).toMatchObject({ people: 1, embedded: 0, embedderUnavailable: true, merged: [{ keptId: hobbit.id, mergedId: dup.id }] });
    expect((await embeddingsOf(person.id)).facts).toEqual(before.facts);
  });

  it("fills in an embedding without making the memory look changed, and never one for words the memory no longer has", async () => {
    const person = await newPerson();
    const dune = await capture(person.id, "book", "Dune", { embedding: null });
    const solaris = await capture(person.id, "book", "Solaris", { embedding: null });
    const before = await embeddingsOf(person.id);
    const missing = await testDb().withUser(person.id, (tx) => missingEmbeddings(tx, person.id, 10));
    // Renamed after the listing (its own embedding failed): the vector of the old name is not stored.
    await testDb().withUser(person.id, (tx) => tx.execute(sql`update entities set name = 'Solaris (Lem)', normalized_name = 'solaris (lem)' where id = ${solaris.id}`));
    const vectors = await localEmbedder.embed(missing.map((m) => m.text));
    const stored = await testDb().withUser(person.id, (tx) => storeEmbeddings(tx, missing.map((m, i) => ({ ...m, embedding: vectors[i]! }))));
    expect(stored).toBe(1);
    const after = await embeddingsOf(person.id);
    const row = (rows: EmbeddingRow[], id: string) => rows.find((r) => r.id === id)!;
    expect(row(after.entities, dune.id).embedding).not.toBeNull();
    expect(new Date(row(after.entities, dune.id).updated_at)).toEqual(new Date(row(before.entities, dune.id).updated_at));
    expect(row(after.entities, solaris.id).embedding).toBeNull();
  });

  it("stores nothing of a batch the embedder answered with the wrong number of vectors", async () => {
    const person = await newPerson();
    await capture(person.id, "book", "Dune", { embedding: null });
    await capture(person.id, "book", "Solaris", { embedding: null });
    const before = await embeddingsOf(person.id);
    const oneShort: Embedder = { name: "one-short", embed: async (texts) => localEmbedder.embed(texts.slice(1)) };

    const { error } = await runOnce(testWorkflows({ embedder: oneShort }).functions.memoryConsolidate, imported(person.id));
    expect(error?.message).toMatch(/answered 1 embeddings for 2 texts/);
    expect(await embeddingsOf(person.id)).toEqual(before);
  });
});
