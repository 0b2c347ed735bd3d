// memory-consolidate with @inngest/test, missing embeddings: memories stored without an embedding (an
// import stores none, a writer's embedder may have failed) given the one their writer would have stored,
// all of a person's on memory/imported (a batch a step, then the merge) and a bounded number a night;
// archived and superseded memories never, nothing stored when the embedder fails or miscounts, and a
// filled-in embedding neither marks the memory as changed nor lands on words it no longer has. Nightly
// runs have their "people" step mocked to this test's people (Postgres is shared with test files
// running in parallel). Merging: memory-consolidate-merge.test.ts.
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { localEmbedder, type Embedder } from "../../../agents/integrations/model/embeddings";
import { EMBED_BATCH, NIGHTLY_EMBED_LIMIT } from "../../../agents/workflows/functions/memory-consolidate";
import { exportMemory, importMemory } from "../../../db/repositories/export";
import { recordFact } from "../../../db/repositories/facts";
import { archiveEntity, captureEntity } from "../../../db/repositories/memory";
import { recallEntities } from "../../../db/repositories/recall";
import { vectorLiteral } from "../../../db/repositories/recall-shared";
import { missingEmbeddings, storeEmbeddings } from "../../../db/repositories/embeddings";
import { newPerson, runOnce, testDb, testWorkflows } from "./harness";
import { capture, captureEmbedding, consolidate, nightly } from "./memory-consolidate-fixtures";

/** A fact stored without an embedding (as when the embedder failed); `subject` makes a later one supersede it. */
async function factWithoutEmbedding(userId: string, statement: string, subject = "") {
  return testDb().withUser(userId, async (tx) => {
    const { factId } = await recordFact(tx, userId, {
      statement,
      category: "general",
      subject,
      confidence: 0.8,
      embedding: null,
      sourceId: null,
    });
    return factId;
  });
}

interface EmbeddingRow {
  id: string;
  embedding: string | null;
  updated_at: string | Date;
}

/** Every entity and fact of the person, with its embedding in pgvector's text form (or null). */
async function embeddingsOf(userId: string): Promise<{ entities: EmbeddingRow[]; facts: EmbeddingRow[] }> {
  return testDb().withUser(userId, async (tx) => ({
    entities: (await tx.execute(
      sql`select id, embedding::text as embedding, updated_at from entities order by id`,
    )) as unknown as EmbeddingRow[],
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

/** The ids of the person's entities of `type`, sorted. */
async function entityIds(userId: string, type: string): Promise<string[]> {
  const rows = (await testDb().withUser(userId, (tx) =>
    tx.execute(sql`select id from entities where type = ${type} order by id`),
  )) as unknown as Array<{ id: string }>;
  return rows.map((r) => r.id);
}

/** An embedder whose service is down. */
const failingEmbedder: Embedder = {
  name: "down",
  embed: async () => {
    throw new Error("embeddings service down for the test");
  },
};

/** The event POST /api/import emits after adding memories. */
const imported = (userId: string) => ({ name: "memory/imported", data: { userId } }) as const;

/** Names of the step.run calls a run made (the spies of @inngest/test). */
function stepsRun(ctx: { step: { run: unknown } }): string[] {
  return (ctx.step.run as { mock: { calls: Array<[string, ...unknown[]]> } }).mock.calls.map(([id]) => id);
}

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
    expect(result).toMatchObject({ people: 1, embedded: 4, merged: 0 });

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
    expect(result).toMatchObject({ people: 1, embedded: count + 2, merged: 1 });
    expect(stepsRun(ctx)).toEqual(["embed-0", "embed-1", "merge"]);
    expect(await entityIds(person.id, "book")).toEqual([hobbit.id]);
    expect(await entityIds(person.id, "book")).not.toContain(dup.id);
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
    expect(first.output).toMatchObject({ people: 1, embedded: NIGHTLY_EMBED_LIMIT, merged: 0 });
    const missing = await embeddingsOf(person.id);
    expect(missing.entities.filter((e) => e.embedding === null)).toHaveLength(3);
    expect(missing.facts.find((f) => f.id === fact)?.embedding).toBeNull();

    const second = await consolidate([person.id]);
    expect(second.output).toMatchObject({ people: 1, embedded: 4, merged: 0 });
    const none = await embeddingsOf(person.id);
    expect([...none.entities, ...none.facts].filter((r) => r.embedding === null)).toEqual([]);
  });

  it("an import's run fails its step and stores nothing when the embedder fails (Inngest retries it); the night still merges", async () => {
    const person = await newPerson();
    const dune = await capture(person.id, "book", "Dune", { embedding: null });
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
    expect(nightlyRun.result).toMatchObject({ people: 1, embedded: 0, embedderUnavailable: true, merged: 1 });
    expect(await entityIds(person.id, "book")).toEqual([hobbit.id, dune.id].sort());
    expect(await entityIds(person.id, "book")).not.toContain(dup.id);
    expect((await embeddingsOf(person.id)).facts).toEqual(before.facts);
  });

  it("fills in an embedding without making the memory look changed, and never one for words the memory no longer has", async () => {
    const person = await newPerson();
    const dune = await capture(person.id, "book", "Dune", { embedding: null });
    const solaris = await capture(person.id, "book", "Solaris", { embedding: null });
    const before = await embeddingsOf(person.id);
    const missing = await testDb().withUser(person.id, (tx) => missingEmbeddings(tx, person.id, 10));
    // Renamed after the listing (its own embedding failed): the vector of the old name is not stored.
    await testDb().withUser(person.id, (tx) =>
      tx.execute(sql`update entities set name = 'Solaris (Lem)', normalized_name = 'solaris (lem)' where id = ${solaris.id}`),
    );
    const vectors = await localEmbedder.embed(missing.map((m) => m.text));
    const stored = await testDb().withUser(person.id, (tx) =>
      storeEmbeddings(
        tx,
        missing.map((m, i) => ({ ...m, embedding: vectors[i]! })),
      ),
    );
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
