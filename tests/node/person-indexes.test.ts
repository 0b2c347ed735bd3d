// Guards `npm run db:person-indexes` (ops/person-indexes.ts): a person holding more memories than the
// threshold gets a vector index of their own, which their recall then walks instead of everyone's;
// nobody else's recall does; a run changes nothing the second time; the index goes when the person
// falls under half the threshold or their account is deleted. On the embedded Postgres, as the
// database's owner, with row-level security forced on the owner too.
import { sql as sqlTag } from "drizzle-orm";
import type postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../db/database";
import { createPerson } from "../../db/repositories/auth";
import { type IndexLayout, indexLayout, personIndexName, type RecallQuery, recallSql } from "../../db/repositories/recall";
import { EMBEDDING_DIMENSIONS } from "../../db/schema";
import { type SetUpDatabase, setUpEmbeddedDatabase } from "./helpers";
import {
  GRAPHS_WARNING,
  graphsWarning,
  PERSON_GRAPH_OPTIONS,
  personGraphCount,
  runPersonIndexes,
  tunePersonIndexes,
} from "../../ops/person-indexes";

let setUp: SetUpDatabase;
let owner: postgres.Sql;
let db: Database;

beforeAll(async () => {
  setUp = await setUpEmbeddedDatabase("person-indexes-test");
  ({ owner, db } = setUp);
}, 120_000);
afterAll(() => setUp.stop());

/** `count` memories of `userId`, each with its own random embedding. */
async function fill(userId: string, count: number) {
  await db.withUser(userId, (tx) =>
    tx.execute(sqlTag`insert into entities (user_id, type, name, normalized_name, embedding)
      select ${userId}, 'note', 'note ' || g, 'note ' || g,
             (select ('[' || string_agg((random() - 0.5)::text, ',') || ']')::vector from generate_series(1, ${EMBEDDING_DIMENSIONS}) d where g > 0)
      from generate_series(1, ${count}) g`),
  );
}

/** The plan of `userId`'s recall statement (for `layout`, when given), with scopes over 10 rows searched through HNSW. */
async function planOf(userId: string, layout?: IndexLayout): Promise<string[]> {
  const query: RecallQuery = {
    query: "zzz",
    limit: 20,
    embedding: Array.from({ length: EMBEDDING_DIMENSIONS }, (_, i) => Math.sin(i)),
    scopeRows: 10,
  };
  const plan = await db.withUser(userId, async (tx) => {
    // As at scale, where sorting a large person's rows by distance is what the index spares.
    await tx.execute(sqlTag`select set_config('enable_sort', 'off', true)`);
    return (await tx.execute(sqlTag`explain ${recallSql(userId, query, layout)}`)) as unknown as Array<{ "QUERY PLAN": string }>;
  });
  return plan.map((row) => row["QUERY PLAN"]);
}

/** The vector indexes the plan of `userId`'s recall walks. */
const indexesWalked = async (userId: string, layout?: IndexLayout) =>
  (await planOf(userId, layout)).flatMap((line) => /Index Scan using (\S+)/.exec(line)?.[1] ?? []).filter((name) => name.includes("hnsw"));

const personIndexes = async () =>
  (
    await owner<Array<{ indexname: string }>>`
    select indexname from pg_indexes where tablename = 'entities' and indexname like 'entities_hnsw_person_%' order by 1`
  ).map((r) => r.indexname);

/** The build options of `userId`'s graph (null: pgvector's defaults). */
const graphOptions = async (userId: string) =>
  (await owner<[{ options: string[] | null }]>`select reloptions as options from pg_class where relname = ${personIndexName(userId)}`)[0]
    .options;

describe("db:person-indexes", () => {
  it("gives a large person a graph of their own, walked by their recall only; idempotent; rebuilt with current options; dropped when they shrink or leave", async () => {
    const large = await createPerson(db, { displayName: "large" });
    const small = await createPerson(db, { displayName: "small" });
    const leaving = await createPerson(db, { displayName: "leaving" });
    await fill(large.id, 120);
    await fill(small.id, 30);
    await fill(leaving.id, 110);

    const changes = await tunePersonIndexes(owner, 100);
    expect(changes.map((c) => [c.userId, c.memories, c.change]).sort()).toEqual(
      [
        [large.id, 120, "created"],
        [leaving.id, 110, "created"],
      ].sort(),
    );
    expect(await personIndexes()).toEqual([personIndexName(large.id), personIndexName(leaving.id)].sort());
    expect(await indexesWalked(large.id)).toEqual([personIndexName(large.id)]);
    expect(await indexesWalked(small.id)).toEqual(["entities_embedding_hnsw"]);
    // Recall learns who has a graph, and plans their statement knowing it: the graph walked, their
    // scope never counted nor ranked by sketches (no scan of their rows in time order).
    expect((await indexLayout(db, large.id)).personGraph).toBe(true);
    expect((await indexLayout(db, small.id)).personGraph).toBe(false);
    const known = { trigramIndexed: true, personGraph: true };
    expect(await indexesWalked(large.id, known)).toEqual([personIndexName(large.id)]);
    const planned = await planOf(large.id, known);
    expect(planned).not.toContainEqual(expect.stringContaining("CTE scope_size"));
    expect(planned).not.toContainEqual(expect.stringContaining("entities_user_recall_at_idx"));
    expect(await planOf(large.id)).toContainEqual(expect.stringContaining("CTE scope_size"));
    // Written for the layout, the statement answers as the one that asks: a name, words, a misspelled
    // name (which a person holding many is never searched by trigrams for: nothing here, either way).
    for (const [words, found] of [
      ["note 17", 1],
      ["note", 20],
      ["nte 17", 0],
    ] as const) {
      const query: RecallQuery = {
        query: words,
        limit: 20,
        embedding: Array.from({ length: EMBEDDING_DIMENSIONS }, (_, i) => Math.cos(i)),
      };
      const ids = async (layout?: IndexLayout) =>
        (await db.readAsUser<{ id: string }>(large.id, [recallSql(large.id, query, layout)])).map((r) => r.id);
      expect(await ids(known)).toEqual(await ids());
      expect(await ids(known)).toHaveLength(found);
      // And nothing it rules out is written, so nothing of it is planned: no sketch ranking, no name compared.
      const written = recallSql(large.id, query, known);
      const text = (await db.withUser(large.id, (tx) => tx.execute(sqlTag`explain (verbose) ${written}`))) as unknown as Array<{
        "QUERY PLAN": string;
      }>;
      const plan = text.map((row) => row["QUERY PLAN"]).join("\n");
      expect(plan).not.toMatch(/<~>/);
      expect(plan).not.toMatch(/search_name %/);
    }

    // A second run changes nothing.
    expect(await tunePersonIndexes(owner, 100)).toEqual([]);
    expect(await graphOptions(large.id)).toEqual(PERSON_GRAPH_OPTIONS);

    // A graph an older release built (pgvector's default options) is rebuilt and swapped in.
    const name = personIndexName(large.id);
    await owner.unsafe(`drop index ${name}`);
    await owner.unsafe(`create index ${name} on entities using hnsw (embedding vector_cosine_ops) where user_id = '${large.id}'::uuid`);
    expect(await graphOptions(large.id)).toBeNull();
    expect((await tunePersonIndexes(owner, 100)).map((c) => [c.userId, c.change])).toEqual([[large.id, "rebuilt"]]);
    expect(await graphOptions(large.id)).toEqual(PERSON_GRAPH_OPTIONS);
    expect(await personIndexes()).toEqual([personIndexName(large.id), personIndexName(leaving.id)].sort());
    expect(await indexesWalked(large.id)).toEqual([name]);

    // A swap interrupted once the old graph was dropped: the new one is renamed, not built again.
    await owner.unsafe(`alter index ${name} rename to ${name}_next`);
    expect(await personGraphCount(owner)).toBe(1); // the one being swapped in is not counted yet
    expect((await tunePersonIndexes(owner, 100)).map((c) => [c.userId, c.change])).toEqual([[large.id, "created"]]);
    expect(await personIndexes()).toEqual([personIndexName(large.id), personIndexName(leaving.id)].sort());
    expect(await tunePersonIndexes(owner, 100)).toEqual([]);
    expect(await personGraphCount(owner)).toBe(2);
    // The run as the command makes it: quiet at two graphs, a warning past one.
    const lines: string[] = [];
    await runPersonIndexes(owner, (line) => lines.push(line), { from: 100 });
    expect(lines).toEqual(["db:person-indexes: done (0 changed)"]);
    lines.length = 0;
    await runPersonIndexes(owner, (line) => lines.push(line), { from: 100, warnAbove: 1 });
    expect(lines).toEqual([
      expect.stringMatching(/^db:person-indexes: warning: 2 people have a vector graph of their own.*partitioning/),
      "db:person-indexes: done (0 changed)",
    ]);

    // Under half the threshold: dropped. An account deleted: its index dropped with it.
    await db.withUser(large.id, (tx) => tx.execute(sqlTag`delete from entities where user_id = ${large.id} and name not like 'note 1_'`));
    await owner`delete from auth.users where id = ${leaving.id}`;
    const later = await tunePersonIndexes(owner, 100);
    expect(later.map((c) => c.change)).toEqual(["dropped", "dropped"]);
    expect(await personIndexes()).toEqual([]);
    expect(await indexesWalked(large.id)).toEqual(["entities_embedding_hnsw"]);
  }, 120_000);
});

describe("db:person-indexes' warning", () => {
  it("says when the graphs slow everyone's planning, past GRAPHS_WARNING of them", () => {
    expect(graphsWarning(0)).toBeNull();
    expect(graphsWarning(GRAPHS_WARNING)).toBeNull();
    expect(graphsWarning(GRAPHS_WARNING + 1)).toMatch(/^101 people have a vector graph of their own.*per hundred graphs.*partitioning/);
  });
});
