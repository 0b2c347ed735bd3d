// Guards recall where the database's setup could not mark full-text and trigram matching LEAKPROOF (a
// managed database's owner: db/sql/0400_planner.sql needs a superuser). Row-level security then keeps
// `%` out of its index, and recall compares misspelled names only when the person holds few; a name's
// words are matched through search.name_matches (migration 0025) in either setup, by its GIN index. The
// answers must be the very ones the superuser's setup gives, and the plan must never check `@@` on every
// row of the person or compare every name. In either setup a person holding many is never searched for
// a misspelled name by trigrams. On the embedded Postgres, as the runtime role.
import { sql as sqlTag } from "drizzle-orm";
import type postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../../db/database";
import { createPerson } from "../../db/repositories/auth";
import {
  entityStatements,
  type IndexLayout,
  indexLayout,
  planRecall,
  type RecallQuery,
  recall,
  recallMemory,
  recallSql,
  SCOPE_ROWS,
} from "../../db/repositories/recall";
import { type RecallRow, toRecalled } from "../../db/repositories/recall-rows";
import { EMBEDDING_DIMENSIONS } from "../../db/schema";
import { normalizeName } from "../../db/search-key";
import { nameScans, type SetUpDatabase, setUpEmbeddedDatabase } from "./helpers";
import { mulberry32 } from "../seeded-random";

let setUp: SetUpDatabase;
let owner: postgres.Sql;
let db: Database;
let workerUrl: string;
let userId: string;
/** A person holding the same memories and SCOPE_ROWS more: every scope of theirs without a window is large. */
let largeId: string;

const random = mulberry32(28);
const vector = () => Array.from({ length: EMBEDDING_DIMENSIONS }, () => random() - 0.5);
const literal = (v: number[]) => `[${v.join(",")}]`;

/** Names sharing common words, accents, another script, a word only a type holds. */
const NAMED: Array<[string, string]> = [
  ["book", "The Name of the Rose"],
  ["book", "Cien años de soledad"],
  ["book", "Преступление и наказание Достоевского"],
  ["movie", "Solaris"],
  ["place", "Rose Garden Café"],
  ["project", "Garden shed"],
  ["note", "sci-fi reading list"],
];

beforeAll(async () => {
  setUp = await setUpEmbeddedDatabase("recall-owner-only-test");
  ({ owner, db, workerUrl } = setUp);
  userId = (await createPerson(db, { displayName: "owner-only" })).id;
  // Three hundred memories whose names share "name", "rose", "garden" and "the" with the ones above.
  const rows: Array<[string, string]> = [...NAMED];
  for (let i = 0; i < 300; i++) rows.push([i % 2 ? "note" : "book", `The ${["name", "rose", "garden", "river"][i % 4]} ${i}`]);
  await db.withUser(userId, async (tx) => {
    for (const [type, name] of rows) {
      await tx.execute(sqlTag`insert into entities (user_id, type, name, normalized_name, embedding)
        values (${userId}, ${type}, ${name}, ${normalizeName(name)}, ${literal(vector())}::vector)`);
    }
  });
  largeId = (await createPerson(db, { displayName: "owner-only, large" })).id;
  await owner`insert into entities (user_id, type, name, normalized_name, embedding)
    select ${largeId}, type, name, normalized_name, embedding from entities where user_id = ${userId}`;
  await owner`insert into entities (user_id, type, name, normalized_name)
    select ${largeId}, 'note', 'Errand ' || n, 'errand ' || n from generate_series(1, ${SCOPE_ROWS}) n`;
  await owner`vacuum (analyze) entities`;
}, 120_000);
afterAll(() => setUp.stop());

const QUESTIONS: RecallQuery[] = [
  "The Name of the Rose",
  "name rose",
  "cien anos",
  "достоевский",
  "movie",
  "garden",
  "sci-fi",
  "Solaaris",
  "what do I cook on sundays?",
].map((query) => ({ query, limit: 20, embedding: vector() }));

/** Recall's answers to QUESTIONS, for `person` (the small one unless told). */
const answers = (person = userId) =>
  Promise.all(
    QUESTIONS.map((q) =>
      db.withUser(person, async (tx) =>
        (await recallMemory(tx, person, q)).map((r) => (r.kind === "entity" ? r.entity.name : r.fact.statement)),
      ),
    ),
  );

/**
 * The entity answers of recall's statement planned for `layout` (recall's IndexLayout), as recall sends
 * it — right or stale: a layout is kept for minutes, and the setup can change meanwhile.
 */
const answersFor = (layout: IndexLayout) =>
  Promise.all(
    QUESTIONS.map(async (q) =>
      (await db.readAsUser<RecallRow>(userId, entityStatements(userId, q, layout))).map((row) => toRecalled(row).entity.name),
    ),
  );
/** The layout recall learns now (a new Database: each keeps what it learnt for minutes). */
async function learntLayout(): Promise<IndexLayout> {
  const fresh = new Database(workerUrl, { max: 1 });
  try {
    return await indexLayout(fresh, userId);
  } finally {
    await fresh.close();
  }
}
const superuserLayout: IndexLayout = { trigramIndexed: true, personGraph: false };
const ownerOnlyLayout: IndexLayout = { trigramIndexed: false, personGraph: false };

/** The plan of the entity statement for `query` (planned for `layout`, when given). */
async function plan(query: RecallQuery, layout?: IndexLayout): Promise<string[]> {
  const lines = (await db.withUser(userId, (tx) => tx.execute(sqlTag`explain ${recallSql(userId, query, layout)}`))) as unknown as Array<{
    "QUERY PLAN": string;
  }>;
  return lines.map((l) => l["QUERY PLAN"]);
}

interface PlanNode {
  /** The operator's line: "Index Only Scan using … (actual …)" or "… (never executed)". */
  head: string;
  /** Its detail lines: Index Cond, Filter, Rows Removed by Filter… */
  detail: string[];
}

/**
 * The nodes of an EXPLAIN ANALYZE of the entity statement that ran (`unexecuted`: also those it never
 * reached), planned as recall plans it (planRecall: never a read of the whole table, which at three
 * hundred rows the planner would otherwise choose); bitmap scans off without `bitmaps`.
 */
async function executedNodes(query: RecallQuery, { bitmaps = true, unexecuted = false, person = userId } = {}): Promise<PlanNode[]> {
  const lines = await db.withUser(person, async (tx) => {
    await planRecall(tx, query);
    await tx.execute(sqlTag`select set_config('enable_bitmapscan', ${String(bitmaps)}, true)`);
    return (await tx.execute(sqlTag`explain (analyze, costs off) ${recallSql(person, query)}`)) as unknown as Array<{
      "QUERY PLAN": string;
    }>;
  });
  const nodes: PlanNode[] = [];
  for (const { "QUERY PLAN": line } of lines) {
    if (/\((actual|never executed)/.test(line)) nodes.push({ head: line.trim(), detail: [] });
    else nodes.at(-1)?.detail.push(line.trim());
  }
  return nodes.filter((n) => unexecuted || !n.head.includes("never executed"));
}
/** nameScans of recall's statement for `query`, planned as recall plans it. */
const namesScanned = (person: string, query: RecallQuery) => nameScans(db, person, recallSql(person, query), (tx) => planRecall(tx, query));
const filtering = (nodes: PlanNode[], what: string) =>
  nodes.filter((n) => n.detail.some((d) => d.startsWith("Filter:") && d.includes(what)));
const removed = (node: PlanNode) => Number(/Rows Removed by Filter: (\d+)/.exec(node.detail.join("\n"))?.[1] ?? 0);

describe("recall without LEAKPROOF matching (a managed database's owner-only setup)", () => {
  let superuser: string[][];
  let superuserLarge: string[][];

  it("answers as the superuser's setup does", async () => {
    superuser = await answers();
    superuserLarge = await answers(largeId);
    // The questions find what they name: the guard of the comparison below.
    expect(superuser[0]![0]).toBe("The Name of the Rose");
    expect(superuser[2]![0]).toBe("Cien años de soledad");
    expect(superuser[3]![0]).toBe("Преступление и наказание Достоевского");
    expect(superuser[4]).toContain("Solaris");
    expect(superuser[6]![0]).toBe("sci-fi reading list");
    expect(superuser[7]![0]).toBe("Solaris");
    // A large scope's too (found through the GIN index here, through the person's words below).
    expect(superuserLarge[0]![0]).toBe("The Name of the Rose");
    expect(superuserLarge[3]![0]).toBe("Преступление и наказание Достоевского");

    expect(await answersFor(superuserLayout)).toEqual(superuser);
    expect(await learntLayout()).toEqual(superuserLayout);
    // The tools' recall: its first statement plans every way, and the layout is learnt beside it.
    const first = await recall(db, userId, QUESTIONS[0]!);
    expect(first.map((r) => (r.kind === "entity" ? r.entity.name : r.fact.statement))).toEqual(superuser[0]);
    // Planned for a layout, the statement asks pg_proc nothing: the other setup's branches are left out.
    expect(await plan(QUESTIONS[1]!)).toContainEqual(expect.stringContaining("pg_proc"));
    expect(await plan(QUESTIONS[1]!, superuserLayout)).not.toContainEqual(expect.stringContaining("pg_proc"));
    expect(await plan(QUESTIONS[1]!, ownerOnlyLayout)).not.toContainEqual(expect.stringContaining("pg_proc"));

    await owner.unsafe(`alter function similarity_op(text, text) not leakproof;
      alter function word_similarity_op(text, text) not leakproof;
      alter function ts_match_vq(tsvector, tsquery) not leakproof`);
    expect(await answers()).toEqual(superuser);
    expect(await answers(largeId)).toEqual(superuserLarge);
    // Recall's statement planned for this setup, and for the other one (a layout learnt before the change).
    expect(await answersFor(ownerOnlyLayout)).toEqual(superuser);
    expect(await answersFor(superuserLayout)).toEqual(superuser);
    expect(await learntLayout()).toEqual(ownerOnlyLayout);
    // The Database recall learnt it on keeps it (for minutes): its recall plans for the old setup
    // meanwhile, and answers the same (above).
    expect(await indexLayout(db, userId)).toEqual(superuserLayout);
  });

  it("matches a name's words through the names' GIN index, for a scope of any size, reading no entity for them", async () => {
    for (const person of [userId, largeId]) {
      const nodes = await executedNodes(QUESTIONS[1]!, { person });
      expect(nodes.map((n) => n.head)).toContainEqual(expect.stringContaining("Function Scan on name_matches"));
      // No name is checked for the words, and `@@` only on a row whose name is the question itself.
      expect(filtering(nodes, "strpos(")).toEqual([]);
      for (const node of filtering(nodes, "search @@")) expect(removed(node)).toBeLessThanOrEqual(1);
      expect(await namesScanned(person, QUESTIONS[1]!)).toEqual({ gin: 1, table: 0 });
    }
  });

  it("compares a misspelled name with every name only for a person holding few", async () => {
    // A person holding many: no name is compared (their scope_rows are empty); the vector and full-text
    // lists stand.
    for (const node of filtering(await executedNodes(QUESTIONS[8]!, { person: largeId }), "search_name %")) {
      expect(node.head).toMatch(/CTE Scan on scope_rows \(actual [^)]*rows=0(\.0+)? /);
    }
    // A person holding few: their names are compared from the scope's own rows, not the table.
    const compared = filtering(await executedNodes(QUESTIONS[8]!), "search_name %");
    expect(compared.map((n) => n.head)).toEqual([expect.stringContaining("CTE Scan on scope_rows")]);
  });

  it("answers as before once the setup marks matching LEAKPROOF again", async () => {
    await owner.unsafe(`alter function similarity_op(text, text) leakproof;
      alter function word_similarity_op(text, text) leakproof;
      alter function ts_match_vq(tsvector, tsquery) leakproof`);
    expect(await answers()).toEqual(superuser);
    expect(await answersFor(superuserLayout)).toEqual(superuser);
    expect(await answersFor(ownerOnlyLayout)).toEqual(superuser);
    expect(await namesScanned(userId, QUESTIONS[1]!)).toEqual({ gin: 1, table: 0 });
    // A misspelled name is looked for through the trigram index for a person holding few, never for
    // one holding many (a bitmap of common trigrams among 100k names took up to 50 ms).
    const trigrams = (nodes: PlanNode[]) =>
      nodes.filter(
        (n) => n.head.includes("Bitmap Index Scan on entities_user_name_trgm") && n.detail.some((d) => d.includes("search_name %")),
      );
    expect(trigrams(await executedNodes(QUESTIONS[8]!))).toHaveLength(1);
    expect(trigrams(await executedNodes(QUESTIONS[8]!, { person: largeId }))).toEqual([]);
  });
});
