// Recall: the person's active entities and current facts ranked for one question, optionally bounded in
// time. recall (the tools') reads as the person in one round trip per statement (Database.readAsUser);
// every other function takes a transaction Database.withUser opened (row-level security scopes both to
// one person). Names and questions are compared by their search key (db/search-key.ts: lowercase, NFKC,
// accents folded) so "cien anos" finds "Cien años" and "VERWANDLUNG" finds "Die Verwandlung"; the
// full-text configuration is 'simple' (no stemming in any language), so a long word is matched by its
// beginning instead ("достоевского" → "достоевск:*" finds "Достоевский").
import { type SQL, sql } from "drizzle-orm";
import { type Database, sqlRows, type Tx } from "../database";
import { recallFacts, recallFactsSql } from "./recall-facts";
import { type FactRow, type RecalledEntity, type RecallResult, type RecallRow, toRecalled, toRecalledFact } from "./recall-rows";
import {
  CANDIDATES,
  isBounded,
  MAX_VECTOR_DISTANCE,
  noRows,
  PROBE,
  PROBE_SKETCH,
  probeCte,
  type RecallQuery,
  RRF_K,
  SKETCH_CANDIDATES,
  VECTOR_CANDIDATES,
  vectorLiteral,
} from "./recall-shared";
import { terms } from "./recall-terms";

export type { RecallResult, RecalledEntity } from "./recall-rows";
export type { RecallQuery } from "./recall-shared";

/** An exact name match outranks any fused score (one list's top rank is 1/61 ≈ 0.016). */
const EXACT_NAME_BONUS = 0.05;
/** Trigram similarity from which a name counts as a (misspelled) match. */
const TRIGRAM_MATCH = 0.3;
/** Small nudge toward what was touched recently (decays over ~30 days). */
const RECENCY_WEIGHT = 0.002;
/**
 * A scope (the person's rows, of a type, in a window) of at most this many rows is ranked by its rows'
 * sketches (the embeddings' signs, which the (user, recall_at) and (user, type, recall_at) indexes
 * carry: an index-only scan, 4 ms for 7,000 rows) and its closest SKETCH_CANDIDATES then by their real
 * distance: a person of up to 10k memories, a month at 100k, a type. A larger one is searched through
 * HNSW with its filters in the scan (pgvector's iterative scan goes on past the rows they drop), never
 * filtered afterwards: through the person's own graph, which `npm run db:person-indexes` gives everyone
 * holding more than SCOPE_ROWS (ops/person-indexes.ts), else the shared one. The shared graph's walk past
 * other people's rows took 70-80 ms for a 10k person or a month at 100k, and missed neighbourhoods.
 */
export const SCOPE_ROWS = 10_000;
/** The vector index of one person's own rows (ops/person-indexes.ts makes and drops them). */
export const PERSON_INDEX_PREFIX = "entities_hnsw_person_";

/** The index name of `userId`'s graph: the prefix and the id's 32 hex digits (53 characters). */
export function personIndexName(userId: string): string {
  return `${PERSON_INDEX_PREFIX}${userId.replaceAll("-", "").toLowerCase()}`;
}

/** A window's names compared with a misspelled one only up to this many (a similarity each). */
const FALLBACK_ROWS = 2000;

/**
 * How the entity statement is planned, set just before it (in its transaction, or in its round trip):
 * - Never by reading the whole table (`enable_seqscan` off). Every read in it is of one person's rows,
 *   and every table it reads has an index led by the person. Where the person holds most of the table
 *   (a deployment of one or a few people), the planner otherwise read all of it: a sequential scan and
 *   a sort of 10,000 memories instead of the covering index's ordered read, and a scan of the table
 *   for the 200 embeddings re-ranked instead of their ids, 19 ms against 10 (bench:mcp's 10k person).
 *   In a shared table the plans are the same either way (bench:recall's 100k, 10k and 5k people).
 * - For a window, sorting discouraged too, so that "the scope's nearest by distance" of a large window
 *   walks the HNSW index (which yields rows in distance order, the window's bounds in the scan) instead
 *   of reading the whole window through a btree and sorting it by computed distance (580 ms for a year
 *   at 100k). A sort that is the only way (ranking a small scope, the fused list) still runs.
 * Each setting ends with the transaction (set_config's `true`).
 */
const planSettings = (query: Pick<RecallQuery, "since" | "before">) =>
  sql`select set_config('enable_seqscan', 'off', true)${isBounded(query) ? sql`, set_config('enable_sort', 'off', true)` : sql``}`;

/**
 * planSettings inside a transaction, before its recall statements. Awaited: postgres.js sends a
 * statement without parameters ahead of queued ones that have them.
 */
export async function planRecall(tx: Tx, query: Pick<RecallQuery, "since" | "before">): Promise<void> {
  await tx.execute(planSettings(query));
}
/** The transaction's own planning back, for what it does after recall (`/forget` archives). */
const PLAN_DEFAULTS = sql`select set_config(name, reset_val, true) from pg_settings where name in ('enable_seqscan', 'enable_sort')`;

/** Entities and facts in one list, best first. */
const bestOf = (entities: RecallResult[], facts: RecallResult[], limit: number) =>
  [...entities, ...facts].sort((a, b) => b.score - a.score).slice(0, limit);

/**
 * Recall over entities and, unless a type is asked for, current facts, inside the caller's
 * transaction (`/forget` archives what it finds in the same one): both statements go out together
 * (postgres.js pipelines a transaction's queries).
 */
export async function recallMemory(tx: Tx, userId: string, query: RecallQuery): Promise<RecallResult[]> {
  await planRecall(tx, query);
  const [entities, facts] = await Promise.all([
    recallEntities(tx, userId, query),
    query.type ? Promise.resolve([]) : recallFacts(tx, userId, query),
  ]);
  await tx.execute(PLAN_DEFAULTS);
  return bestOf(entities, facts, query.limit);
}

/**
 * Recall for the tools (memory_recall, MCP's search_memory): the entity and the fact statement at once,
 * on two connections, each in one round trip (Database.readAsUser: the person's settings and the
 * statement in one query), so that a recall takes as long as the longer of them rather than both (the
 * server runs one connection's statements one after another: 5–9 ms of facts after 9–20 ms of entities
 * at 100k memories, bench:recall's profile) and waits on the network once rather than four times a
 * transaction. Each is the person's own (row-level security), and both only read: no snapshot they
 * could disagree on matters more than a memory told meanwhile.
 */
export async function recall(db: Database, userId: string, query: RecallQuery): Promise<RecallResult[]> {
  // Unknown (a person's first recall on this Database, or kept too long): the statement that asks, and
  // the layout learnt beside it for the next ones, never a round trip before it.
  const layout = keptLayout(db, userId);
  const [entities, facts] = await Promise.all([
    db.readAsUser<RecallRow>(userId, entityStatements(userId, query, layout)),
    query.type ? [] : db.readAsUser<FactRow>(userId, [recallFactsSql(userId, query)]),
    layout ?? indexLayout(db, userId),
  ]);
  return bestOf(entities.map(toRecalled), facts.map(toRecalledFact), query.limit);
}

/** The entity statement as recall sends it, after its plan settings (planSettings). */
export const entityStatements = (userId: string, query: RecallQuery, layout?: IndexLayout): SQL[] => [
  planSettings(query),
  recallSql(userId, query, layout),
];

/**
 * What the entity statement otherwise asks the server on every run, for the planner to plan every way
 * it could go: whether row-level security lets `%` use its index (the superuser setup marks it
 * LEAKPROOF; a managed database's owner-only setup cannot), and whether the person has a
 * graph of their own (then they hold more than SCOPE_ROWS). Known, the statement is written without
 * what they rule out: the other setup's branches, and a large person's small-scope ranking (planning
 * took 1.5–2.6 ms of each statement at 100k memories when it asked, 0.6–0.9 for a large person's
 * question written for the layout: bench:recall).
 */
export interface IndexLayout {
  trigramIndexed: boolean;
  personGraph: boolean;
}

/**
 * How long an IndexLayout is trusted. The setup changes with `npm run db:setup`, a person's graph with
 * `npm run db:person-indexes` (a nightly job); meanwhile every answer stays right (a graph that appeared
 * is walked anyway, the planner's choice), and a graph dropped under a person who shrank is missed for
 * at most this long (their scope counted as large: searched through the shared graph).
 */
const LAYOUT_TTL_MS = 10 * 60_000;
const layouts = new WeakMap<Database, Map<string, { layout: IndexLayout; until: number }>>();

/** `userId`'s IndexLayout as `db` learnt it, unless it is older than LAYOUT_TTL_MS. */
function keptLayout(db: Database, userId: string): IndexLayout | undefined {
  const kept = layouts.get(db)?.get(userId);
  return kept && kept.until > Date.now() ? kept.layout : undefined;
}

/** `userId`'s IndexLayout on `db`: asked once (one round trip) and then kept LAYOUT_TTL_MS. */
export async function indexLayout(db: Database, userId: string): Promise<IndexLayout> {
  const kept = keptLayout(db, userId);
  if (kept) return kept;
  const [layout] = await db.readAsUser<IndexLayout>(userId, [
    sql`select ${TRIGRAM_INDEXED} as "trigramIndexed", ${hasGraph(userId)} as "personGraph"`,
  ]);
  if (!layout) throw new Error("the index layout query returned no row");
  const people = layouts.get(db) ?? new Map<string, { layout: IndexLayout; until: number }>();
  layouts.set(db, people.set(userId, { layout, until: Date.now() + LAYOUT_TTL_MS }));
  return layout;
}

const TRIGRAM_INDEXED = sql`(select proleakproof from pg_proc where oid = 'similarity_op(text, text)'::regprocedure)`;
/** Whether `userId`'s own graph exists and is valid (one still being built CONCURRENTLY is not). */
const hasGraph = (userId: string) => sql`exists (select 1 from pg_class c join pg_index i on i.indexrelid = c.oid
  where c.relname = ${personIndexName(userId)} and i.indisvalid)`;
/** A known answer as a constant for the planner, else the question that finds it out. */
const known = (answer: boolean | undefined, question: SQL) => (answer === undefined ? question : sql.raw(String(answer)));

/**
 * Hybrid recall over the person's active entities: pgvector cosine (HNSW), full text and trigram
 * similarity on names, and — when a type is given — every entity of that type (with a time bound and
 * no type: everything in the window, newest first), fused with reciprocal-rank fusion plus a small
 * recency term.
 */
export async function recallEntities(tx: Tx, userId: string, query: RecallQuery): Promise<RecalledEntity[]> {
  // Database transactions already set hnsw.iterative_scan and hnsw.ef_search (5 × VECTOR_CANDIDATES).
  const rows = await sqlRows<RecallRow>(tx, recallSql(userId, query));
  return rows.map(toRecalled);
}

/** When a memory counts as being from: when it happened if the person said so, else when they told it. */
const WHEN = sql.raw("recall_at");

/** `and <column> >= since and <column> < before`, for the bounds given. */
function windowOn(column: string, query: Pick<RecallQuery, "since" | "before">) {
  const at = sql.raw(column);
  return sql`${query.since ? sql`and ${at} >= ${query.since.toISOString()}::timestamptz` : sql``}
    ${query.before ? sql`and ${at} < ${query.before.toISOString()}::timestamptz` : sql``}`;
}

/** The single statement behind recallEntities (exported for EXPLAIN in benchmarks); `layout` when known. */
export function recallSql(userId: string, query: RecallQuery, layout?: IndexLayout) {
  const bounded = isBounded(query);
  const { key, words, phrase, nameTerms } = terms(query.query, bounded);
  const vector = vectorLiteral(query.embedding);
  const scopeLimit = query.scopeRows ?? SCOPE_ROWS;
  // A person with a graph of their own holds more than SCOPE_ROWS: their whole scope is large, and what
  // only a small one does is not written into the statement at all (nothing of it is planned or run).
  const largeKnown = Boolean(layout?.personGraph) && !bounded && !query.type;
  const small = largeKnown ? sql`false` : sql`(select small from scope_size)`;
  // Row-level security already limits every scan to this person; repeating "user_id = <constant>"
  // gives the planner the person's real row count (the policy's setting is opaque to it), so it walks
  // the HNSW and GIN indexes instead of reading all of the person's rows through the btree.
  // The type and time filters are only present when given, for the same reason.
  const person = sql`user_id = ${userId} and status = 'active' ${query.type ? sql`and type = ${query.type}` : sql``}`;
  const scope = sql`${person} ${windowOn("recall_at", query)}`;
  const none = noRows("null::uuid as id", "null::text as search_name", "0::bigint as rank");

  // Whether the scope is small: its first scopeRows + 1 index entries counted, in an index that answers
  // alone, without the table (reading the rows took 10 ms at 100k): of the person's active memories by
  // when (migration 0021: narrow entries, 1.0 ms for a month at 100k where the covering index took 2.2),
  // or of the type by when, archived ones too (an upper bound; either path is exact).
  const countScope = query.type
    ? sql`user_id = ${userId} and type = ${query.type} ${windowOn("recall_at", query)}`
    : sql`user_id = ${userId} and status = 'active' ${windowOn("recall_at", query)}`;
  // A small scope's sketches and names, read in the order of the person's own index (of the type or the
  // person, by when), which holds them (migration 0018): an index-only scan, never the table or other
  // people's rows. A large scope's are never read.
  const scopeRows = (columns: SQL) => sql`select ${columns} from entities where ${scope} and ${small}
    order by ${WHEN} desc limit ${scopeLimit + 1}`;
  // The same scope for HNSW: a window's bounds on an expression, so that the planner walks the vector
  // index with them as its filter instead of reading the whole window through the btree and computing
  // every row's distance (470 ms for a year at 100k).
  const hnswScope = sql`${person} ${windowOn("(recall_at + interval '0 s')", query)}`;
  const noNeighbours = noRows("null::uuid as id", "null::text as search_name", "null::float8 as distance");
  const smallScopeNearest = vector
    ? sql`select e.id, e.search_name, e.embedding <=> ${PROBE} as distance
          from (select id from (${scopeRows(sql`id, sketch`)}) s
                order by sketch <~> ${PROBE_SKETCH} limit ${SKETCH_CANDIDATES}) c
          join entities e on e.id = c.id`
    : noNeighbours;
  // The reference: every row of the scope at its real distance (`+ 0`: never through the index).
  const exhaustiveNearest = sql`select id, search_name, embedding <=> ${PROBE} as distance from entities
    where ${scope} order by (embedding <=> ${PROBE}) + 0 limit ${VECTOR_CANDIDATES}`;
  const vectorHits = !vector
    ? none
    : query.exhaustive
      ? sql`select id, search_name, row_number() over (order by distance, id) as rank from (${exhaustiveNearest}) nearest
            where distance <= ${MAX_VECTOR_DISTANCE}`
      : sql`select id, search_name, row_number() over (order by distance, id) as rank from (
            (select id, search_name, distance from small_scope_nearest order by distance, id limit ${VECTOR_CANDIDATES})
            union all
            (select id, search_name, embedding <=> ${PROBE} as distance from entities
             where ${hnswScope} and not ${small}
             order by embedding <=> ${PROBE} limit ${VECTOR_CANDIDATES})
          ) nearest where distance <= ${MAX_VECTOR_DISTANCE}`;
  // Every word must appear: selective enough for the GIN index. Every match is ranked before any is cut
  // (a cut before ranking kept an arbitrary few of hundreds of names sharing common words); a name that is
  // the question itself comes first, whatever its words. Ties go to the newest, then the id, so that the
  // ranking is the same whichever plan computes it.
  // The matches come from search.name_matches (migration 0025): the person's names and what bounds a
  // scope, matched by its GIN index as the owner, in every setup. Under row-level security `@@` could use
  // entities' own index only where a superuser had marked it LEAKPROOF; elsewhere (a managed database's
  // owner-only setup) the words were found by intersecting the person's lists of words (9 ms for two
  // common words at 100k memories) and every match was then read by id (3 ms for 506). Here no entity is
  // read to rank them.
  const tsQuery = nameTerms.join(" & ");
  const fulltextHits = words.length
    ? sql`select id, search_name, row_number() over (order by search_name = ${key} desc, r desc, at desc, id) as rank from (
            select id, search_name, recall_at as at, rank as r from search.name_matches(to_tsquery('simple', ${tsQuery}))
            where status = 'active' ${query.type ? sql`and type = ${query.type}` : sql``} ${windowOn("recall_at", query)}
            union all
            select id, search_name, ${WHEN}, 1::real from entities
            where ${scope} and search_name = ${key} and not search @@ to_tsquery('simple', ${tsQuery})
          ) matches order by rank limit ${CANDIDATES}`
    : none;
  // Misspellings ("Solaaris"): the vector and full-text candidates are re-ranked by trigram
  // similarity, which costs nothing; only when none of them is name-like and no name holds every
  // word (then nothing is misspelled) does the statement fall back to a trigram search of the
  // person's names (one-time filters skip it otherwise): through the trigram index, or for a window
  // over its names when they are FALLBACK_ROWS or fewer (the index cannot bound the time: it read every
  // name of the person sharing the question's trigrams, 100 ms for "that week" at 100k) and not at all when they are many
  // (the window's list and its nearest by meaning stand). A typed question already lists every
  // entity of the type, so it never needs the fallback.
  // A person holding more than SCOPE_ROWS is never searched this way: the trigram index's bitmap of
  // common trigrams ("ins", "lin") among 100k names took up to 50 ms of a question about facts, which
  // names no memory, and their misspelled names are found by meaning and re-ranked (recall@20 0.99 at
  // 100k either way, bench:recall). Where row-level security keeps `%` from the index altogether (a
  // database whose setup could not mark it LEAKPROOF, db/sql/0400_planner.sql: a managed one's
  // owner-only setup), names are compared the way a window's are, only when they are few: otherwise
  // every one got a similarity (417 ms at 100k). The exhaustive reference always compares them all.
  const unmatched = sql`not exists (select 1 from fuzzy where sim >= ${TRIGRAM_MATCH}) and not exists (select 1 from fulltext_hits)`;
  const fewNames = largeKnown ? sql`false` : sql`(select rows from scope_size) <= ${FALLBACK_ROWS}`;
  const inScopeRows = (when: SQL) => sql`union
          select id, similarity(search_name, ${phrase}) as sim from scope_rows
          where ${when} and search_name % ${phrase} and ${unmatched}`;
  const indexed = known(layout?.trigramIndexed, TRIGRAM_INDEXED);
  const throughIndex = (when: SQL) => sql`union
          select id, similarity(search_name, ${phrase}) as sim from entities
          where ${scope} ${when} and search_name % ${phrase} and ${unmatched}`;
  // With the layout known, only the branch it leaves (none for a person known to hold many): every
  // branch written out is planned, ruled out or not (0.4–0.7 ms of the 100k person's planning).
  const fallbackBranches = (): SQL => {
    if (query.type) return sql``;
    if (bounded) return inScopeRows(fewNames);
    if (query.exhaustive) return throughIndex(sql``);
    if (largeKnown) return sql``;
    if (layout) return layout.trigramIndexed ? throughIndex(sql`and ${small}`) : inScopeRows(fewNames);
    return sql`${inScopeRows(sql`not ${indexed} and ${fewNames}`)} ${throughIndex(sql`and ${indexed} and ${small}`)}`;
  };
  const fallback = fallbackBranches();
  // Equally similar names share a rank: fifty names holding the same words are as similar to them,
  // and ordering them by id gave each a random share of the fused score (the newest of them could fall
  // behind older ones: recall-exact test 5).
  const trigramHits = words.length
    ? sql`select id, rank() over (order by sim desc) as rank from (
          select id, sim from fuzzy where sim >= ${TRIGRAM_MATCH}
          ${fallback}
          order by sim desc, id limit ${CANDIDATES}
        ) t`
    : none;
  // "Which books…" lists the type, newest first; with a time bound, the window itself is a list
  // ("what did I do last week?"), newest first.
  const listSize = Math.max(query.limit, CANDIDATES);
  const listHits = bounded
    ? sql`select id, row_number() over (order by ${WHEN} desc, id) as rank from entities where ${scope}
          order by ${WHEN} desc, id limit ${listSize}`
    : query.type
      ? sql`select id, row_number() over (order by updated_at desc, id) as rank
            from entities where ${scope} order by updated_at desc, id limit ${listSize}`
      : noRows("null::uuid as id", "0::bigint as rank");

  // A person with a graph of their own holds more than SCOPE_ROWS (ops/person-indexes.ts): their whole
  // scope is large without counting 10,001 index entries (2.6 ms of each of their questions). A graph
  // still being built (CONCURRENTLY) is not valid yet, and not taken.
  const counted = sql`(select count(*) from (select 1 from entities where ${countScope} limit ${scopeLimit + 1}) s)`;
  const rows =
    bounded || query.type
      ? counted
      : sql`case when ${known(layout?.personGraph, hasGraph(userId))} then ${scopeLimit + 1}::bigint else ${counted} end`;
  return sql`
    with
    ${probeCte(vector)},
    scope_size as materialized (
      select rows, rows <= ${scopeLimit} as small from (select ${rows} as rows offset 0) r
    ),
    -- A small scope's names, for a misspelled one (only read when one is compared).
    scope_rows as materialized (${largeKnown ? noRows("null::uuid as id", "null::text as search_name") : scopeRows(sql`id, search_name`)}),
    -- Materialized: the planner cannot turn a small scope's ranking into an HNSW scan joined back to it.
    small_scope_nearest as materialized (${largeKnown ? noNeighbours : smallScopeNearest}),
    vector_hits as materialized (${vectorHits}),
    fulltext_hits as materialized (${fulltextHits}),
    fuzzy as materialized (
      select id, similarity(search_name, ${phrase}) as sim
      from (select id, search_name from vector_hits union select id, search_name from fulltext_hits) c
    ),
    trigram_hits as (${trigramHits}),
    list_hits as (${listHits}),
    fused as (
      select id, sum(1.0 / (${RRF_K} + rank)) as rrf, array_agg(distinct kind) as matched_by from (
        select id, rank, 'vector' as kind from vector_hits
        union all select id, rank, 'fulltext' from fulltext_hits
        union all select id, rank, 'trigram' from trigram_hits
        union all select id, rank, ${sql.raw(query.type ? "'type'" : "'time'")} from list_hits
      ) hits group by id
    )
    select e.id, e.type, e.name, e.properties, e.created_at, e.updated_at, e.told_at, e.happened_at,
           f.rrf
             + case when e.search_name = ${key} then ${EXACT_NAME_BONUS}::float8 else 0 end
             + ${RECENCY_WEIGHT}::float8 * exp(-extract(epoch from now() - e.updated_at) / (30 * 86400)) as score,
           f.matched_by, s.kind as source_kind, s.external_id as source_external_id,
           s.payload ->> 'text' as source_text, s.created_at as source_at
    from fused f
    join entities e on e.id = f.id
    left join sources s on s.id = e.source_id
    order by score desc, e.id
    limit ${query.limit}`;
}
