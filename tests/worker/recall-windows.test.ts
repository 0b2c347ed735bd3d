// Guards the two paths recall takes (db/repositories/recall.ts): a small window's rows ranked by their
// sketches and the closest by their real embedding; a window holding more rows than that (SCOPE_ROWS) searched
// through HNSW with the window in the scan, so an older memory of a busy week is still found by meaning. A person's facts, past the
// sketch's candidates, are found by meaning and by a misspelled word among many.
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { localEmbedder } from "../../agents/integrations/model/embeddings";
import type { Person } from "../../db/repositories/auth";
import { recordFact } from "../../db/repositories/facts";
import { captureEntity, recallMemory, type RecallResult } from "../../db/repositories/memory";
import { SKETCH_CANDIDATES } from "../../db/repositories/recall-shared";
import { EMBEDDING_DIMENSIONS } from "../../db/schema";
import { newPerson, testDatabase } from "./helpers";

const DAY_MS = 86_400_000;

async function recall(
  person: Person,
  query: string,
  window: { since?: Date; before?: Date; scopeRows?: number } = {},
): Promise<RecallResult[]> {
  const [embedding] = await localEmbedder.embed([query]);
  return testDatabase().withUser(person.id, (tx) => recallMemory(tx, person.id, { query, limit: 10, embedding: embedding!, ...window }));
}

/** A scope larger than this walks HNSW in these tests (SCOPE_ROWS itself would need 10,000 rows). */
const SCOPE = 2000;

const entity = (results: RecallResult[], name: string) => results.find((r) => r.kind === "entity" && r.entity.name === name);

/**
 * `count` notes inside the last `days` days, each with a one-hot embedding (unlike any question) or,
 * for speed, none (as imported memories have none): either way none of them is near any question.
 */
async function fillWindow(person: Person, count: number, days: number, embedded: boolean) {
  const oneHot = sql`('[' || repeat('0,', g % ${EMBEDDING_DIMENSIONS}) || '1' || repeat(',0', ${EMBEDDING_DIMENSIONS - 1} - g % ${EMBEDDING_DIMENSIONS}) || ']')::vector`;
  await testDatabase().withUser(person.id, (tx) =>
    tx.execute(sql`
      insert into entities (user_id, type, name, normalized_name, embedding, told_at)
      select ${person.id}, 'note', 'filler ' || g, 'filler ' || g, ${embedded ? oneHot : sql`null`},
             now() - (g * ${Math.floor((days * DAY_MS) / (count + 1))} * interval '1 millisecond')
      from generate_series(1, ${count}) g`),
  );
}

describe("recall in a time window", () => {
  it("finds a memory by meaning in a small window, with its real distance", async () => {
    const person = await newPerson();
    const [embedding] = await localEmbedder.embed(["book: Solaris"]);
    await testDatabase().withUser(person.id, (tx) =>
      captureEntity(tx, person.id, { type: "book", name: "Solaris", embedding: embedding!, sourceId: null }),
    );
    await fillWindow(person, 200, 3, true);
    const found = await recall(person, "solaris", { since: new Date(Date.now() - 7 * DAY_MS) });
    expect(entity(found, "Solaris")?.matchedBy).toEqual(expect.arrayContaining(["vector", "time"]));
  });

  it("still finds an older memory of a window too busy to rank by sketch, by meaning (through HNSW)", async () => {
    const person = await newPerson();
    const [embedding] = await localEmbedder.embed(["place: Lighthouse at Cabo da Roca"]);
    await testDatabase().withUser(person.id, async (tx) => {
      await captureEntity(tx, person.id, {
        type: "place",
        name: "Lighthouse at Cabo da Roca",
        embedding: embedding!,
        sourceId: null,
        happenedAt: new Date(Date.now() - 6 * DAY_MS),
      });
    });
    // Newer than the lighthouse: the window's newest SCOPE rows are all fillers.
    await fillWindow(person, SCOPE + 100, 5, false);
    const week = { since: new Date(Date.now() - 7 * DAY_MS), scopeRows: SCOPE };
    const found = await recall(person, "lighthouse cabo roca", week);
    expect(entity(found, "Lighthouse at Cabo da Roca")?.matchedBy).toContain("vector");
    // The window's list is the newest rows; the lighthouse is not among them, only found by its words and meaning.
    expect(entity(found, "Lighthouse at Cabo da Roca")?.matchedBy).not.toContain("time");
  });
});

describe("recall of facts among many", () => {
  it("finds a fact by meaning and by a misspelled word when the person holds more facts than the sketch keeps", async () => {
    const person = await newPerson();
    const statements = Array.from({ length: SKETCH_CANDIDATES + 40 }, (_, i) => `Collects stamp series number ${i}`);
    statements.push("Is vegetarian");
    const vectors = await localEmbedder.embed(statements);
    await testDatabase().withUser(person.id, async (tx) => {
      for (const [i, statement] of statements.entries()) {
        await recordFact(tx, person.id, {
          statement,
          subject: statement === "Is vegetarian" ? "diet" : `stamps ${i}`,
          category: "preference",
          confidence: 0.8,
          embedding: vectors[i]!,
          sourceId: null,
        });
      }
    });
    const [byMeaning] = await recall(person, "vegetarian");
    expect(byMeaning).toMatchObject({ kind: "fact", fact: { statement: "Is vegetarian" } });
    expect(byMeaning!.matchedBy).toContain("vector");
    // Misspelled where neither full text (the word's beginning) nor the embedding sees it: the trigram index.
    const [misspelled] = await recall(person, "wegetarian");
    expect(misspelled).toMatchObject({ kind: "fact", fact: { statement: "Is vegetarian" } });
    expect(misspelled!.matchedBy).toEqual(["trigram"]);
  });
});
