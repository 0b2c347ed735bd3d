// Guards how a person's reads are planned. Recall's entity statement where one person holds the whole
// table (a deployment of one): their rows are read through the indexes led by the person, never the table
// whole. The planner's own choice there was a sequential scan and a sort of every memory, and a scan of
// the table for the embeddings it re-ranks: twice as slow at 10,000 memories (bench:mcp). A transaction
// that recalls goes on planned as before (`/forget` archives in it). And a page of the memory center (and
// of MCP's list_memories) is read in its order from an index, never by sorting all of the person's
// memories (43 ms for the first 20 of 100k). On the embedded Postgres, as the runtime role.
import { sql as sqlTag } from "drizzle-orm";
import type postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../db/database";
import { createPerson } from "../../db/repositories/auth";
import { listMemoryPage, memoryPageSql } from "../../db/repositories/memory-center";
import { entityStatements, type RecallQuery, recall, recallMemory, recallSql } from "../../db/repositories/recall";
import { EMBEDDING_DIMENSIONS } from "../../db/schema";
import { type SetUpDatabase, setUpEmbeddedDatabase } from "./helpers";

let setUp: SetUpDatabase;
let owner: postgres.Sql;
let db: Database;
let userId: string;

const MEMORIES = 300;
const vector = (seed: number) => Array.from({ length: EMBEDDING_DIMENSIONS }, (_, i) => Math.sin(seed * 7.3 + i));

beforeAll(async () => {
  setUp = await setUpEmbeddedDatabase("query-plans-test");
  ({ owner, db } = setUp);
  userId = (await createPerson(db, { displayName: "alone" })).id;
  await db.withUser(userId, (tx) =>
    tx.execute(sqlTag`insert into entities (user_id, type, name, normalized_name, embedding, told_at)
      select ${userId}, (array['book', 'movie', 'place'])[1 + g % 3], 'harbor lantern ' || g, 'harbor lantern ' || g,
             (select ('[' || string_agg(sin(g * 7.3 + d)::text, ',') || ']')::vector from generate_series(0, ${EMBEDDING_DIMENSIONS - 1}) d),
             now() - g * interval '1 day'
      from generate_series(1, ${MEMORIES}) g`),
  );
  await owner`vacuum analyze entities`;
}, 120_000);
afterAll(() => setUp.stop());

const QUESTIONS: Array<[string, RecallQuery]> = [
  ["free words", { query: "harbor lantern 17", limit: 10, embedding: vector(17) }],
  ["a misspelled name", { query: "harbr lanturn 17", limit: 10, embedding: vector(17) }],
  ["a type list", { query: "book", type: "book", limit: 10, embedding: vector(3) }],
  [
    "a month",
    {
      query: "what happened",
      limit: 10,
      embedding: vector(40),
      since: new Date(Date.now() - 60 * 86_400_000),
      before: new Date(Date.now() - 30 * 86_400_000),
    },
  ],
];

/** The plan of the entity statement for `query`, sent as recall sends it (its plan settings first). */
async function planAsSent(query: RecallQuery): Promise<string> {
  const statements = entityStatements(userId, query);
  statements[statements.length - 1] = sqlTag`explain ${recallSql(userId, query)}`;
  const lines = await db.readAsUser<{ "QUERY PLAN": string }>(userId, statements);
  return lines.map((line) => line["QUERY PLAN"]).join("\n");
}

describe("recall where one person holds the whole table", () => {
  it.each(QUESTIONS)("reads %s through the person's indexes, never the table whole", async (_kind, query) => {
    const plan = await planAsSent(query);
    expect(plan).toMatch(/Index (Only )?Scan/);
    expect(plan).not.toMatch(/Seq Scan on (entities|sources)/);
    // And answers: the nearest memory by meaning, or the list, is there.
    const names = (await recall(db, userId, query)).flatMap((result) => (result.kind === "entity" ? [result.entity.name] : []));
    expect(names.length).toBeGreaterThan(0);
    if (!query.since && !query.type) expect(names).toContain("harbor lantern 17");
  });

  it("gives the transaction its planning back after a recall", async () => {
    for (const [, query] of QUESTIONS) {
      const settings = await db.withUser(userId, async (tx) => {
        await recallMemory(tx, userId, query);
        return (await tx.execute(
          sqlTag`select current_setting('enable_seqscan') as seqscan, current_setting('enable_sort') as sort`,
        )) as unknown as Array<{ seqscan: string; sort: string }>;
      });
      expect(settings).toEqual([{ seqscan: "on", sort: "on" }]);
    }
  });
});

describe("a page of the memory center", () => {
  /** The plan of a page's statement, as listMemoryPage sends it. */
  async function pagePlan(query: Parameters<typeof memoryPageSql>[1]): Promise<string> {
    const lines = (await db.withUser(userId, (tx) => tx.execute(sqlTag`explain ${memoryPageSql(userId, query)}`))) as unknown as Array<{
      "QUERY PLAN": string;
    }>;
    return lines.map((line) => line["QUERY PLAN"]).join("\n");
  }

  it("is read newest first from the person's index, the first page and the next, never sorted", async () => {
    const first = await db.withUser(userId, (tx) => listMemoryPage(tx, userId, { limit: 20 }));
    expect(first.memories).toHaveLength(20);
    expect(first.nextCursor).not.toBeNull();
    for (const query of [{ limit: 20 }, { limit: 20, cursor: first.nextCursor ?? undefined }, { limit: 20, type: "book" }]) {
      const plan = await pagePlan(query);
      expect(plan).toMatch(/Index Scan Backward using entities_user_created_idx/);
      expect(plan).not.toMatch(/Sort/);
    }
    // The next page follows the first without a gap or a repeat.
    const second = await db.withUser(userId, (tx) => listMemoryPage(tx, userId, { limit: 20, cursor: first.nextCursor ?? undefined }));
    const newest = await owner<
      Array<{ id: string }>
    >`select id from entities where user_id = ${userId} order by created_at desc, id desc limit 40`;
    expect([...first.memories, ...second.memories].map((memory) => memory.id)).toEqual(newest.map((row) => row.id));
  });
});
