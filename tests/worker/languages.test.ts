// Guards memory in other languages: names in Spanish, Russian and German are captured as said and
// recalled by the person's words whatever their case and accents ("cien anos", "VERWANDLUNG"), and by
// another form of the same word ("Достоевского" finds "Достоевский").
import { generateText, isStepCount } from "ai";
import { describe, expect, it } from "vitest";
import { localEmbedder } from "../../agents/integrations/model/embeddings";
import { memoryTools } from "../../agents/turn/tools/memory-tools";
import type { Person } from "../../db/repositories/auth";
import { recallEntities, type RecallResult } from "../../db/repositories/memory";
import { foldForSearch, normalizeName } from "../../db/search-key";
import { newPerson, testDatabase } from "./helpers";
import { scriptedModel, type Step } from "./scripted-model";

async function turn(person: Person, steps: Step[]) {
  const result = await generateText({
    model: scriptedModel([...steps, { text: "ok" }]),
    tools: memoryTools({
      db: testDatabase(),
      userId: person.id,
      embedder: localEmbedder,
      source: { kind: "test", externalId: crypto.randomUUID(), payload: { text: "x" } },
    }),
    stopWhen: isStepCount(steps.length + 1),
    prompt: "x",
  });
  return result.steps.flatMap((step) => step.toolResults.map((r) => r.output));
}

const BOOKS = ["Cien años de soledad", "Преступление и наказание", "Die Verwandlung", "Der Zauberberg"];

async function library(): Promise<Person> {
  const person = await newPerson();
  await turn(person, [
    ...BOOKS.map((name): Step => ({ tool: "memory_capture", input: { type: "book", name } })),
    { tool: "memory_capture", input: { type: "person", name: "Фёдор Достоевский" } },
    { tool: "memory_capture", input: { type: "place", name: "Málaga" } },
  ]);
  return person;
}

describe("capture and recall in Spanish, Russian and German", () => {
  it("keeps names as said, and finds each by the person's words in any case, with or without accents", async () => {
    const person = await library();
    const cases: Array<[string, string]> = [
      ["cien anos", "Cien años de soledad"],
      ["CIEN AÑOS DE SOLEDAD", "Cien años de soledad"],
      ["soledad", "Cien años de soledad"],
      ["преступление", "Преступление и наказание"],
      ["ПРЕСТУПЛЕНИЕ И НАКАЗАНИЕ", "Преступление и наказание"],
      ["VERWANDLUNG", "Die Verwandlung"],
      ["zauberberg", "Der Zauberberg"],
      ["Достоевского", "Фёдор Достоевский"],
      ["Федор Достоевский", "Фёдор Достоевский"],
      ["malaga", "Málaga"],
    ];
    for (const [query, expected] of cases) {
      const [results] = (await turn(person, [{ tool: "memory_recall", input: { query } }])) as RecallResult[][];
      const first = results![0];
      expect({ query, found: first?.kind === "entity" ? first.entity.name : null }).toEqual({ query, found: expected });
      // Found by words, not only by the local embedding: the same question without any vector.
      const lexical = await testDatabase().withUser(person.id, (tx) => recallEntities(tx, person.id, { query, limit: 3, embedding: null }));
      expect({ query, lexical: lexical[0]?.entity.name }).toEqual({ query, lexical: expected });
    }
  });

  it("recalls a typed list in any language, and keeps one memory for a name said with other case", async () => {
    const person = await library();
    const [again] = (await turn(person, [{ tool: "memory_capture", input: { type: "book", name: "CIEN AÑOS DE SOLEDAD" } }])) as Array<{
      created: boolean;
    }>;
    expect(again).toMatchObject({ created: false });
    const [books] = (await turn(person, [
      { tool: "memory_recall", input: { query: "какие книги я читал?", type: "book" } },
    ])) as RecallResult[][];
    expect(books!.map((r) => (r.kind === "entity" ? r.entity.name : "")).sort()).toEqual([...BOOKS].sort());
  });

  it("folds accents the same way in TypeScript as the database does", async () => {
    const person = await library();
    const rows = (await testDatabase().withUser(person.id, (tx) =>
      tx.execute(`select name, normalized_name, search_name from entities` as never),
    )) as unknown as Array<{
      name: string;
      normalized_name: string;
      search_name: string;
    }>;
    for (const row of rows) expect(row.search_name).toBe(foldForSearch(normalizeName(row.name)));
    expect(rows.map((r) => r.search_name)).toEqual(expect.arrayContaining(["cien anos de soledad", "федор достоевский", "malaga"]));
  });
});
