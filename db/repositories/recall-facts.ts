// Recall over the person's current facts (db/repositories/recall.ts runs it beside the entities').
import { sql } from "drizzle-orm";
import { sqlRows, type Tx } from "../database";
import { type FactRow, type RecalledFact, toRecalledFact } from "./recall-rows";
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

/** Word similarity from which a fact's words count as a (misspelled) match. */
const FACT_TRIGRAM_MATCH = 0.5;
/** Small nudge toward facts the person stated surely. */
const CONFIDENCE_WEIGHT = 0.002;

/**
 * The person's current facts (never superseded ones) ranked for the question: cosine over their
 * embeddings, full text and word similarity over statement, subject and category ("my diet" finds
 * "Is vegetarian", subject "diet"), and with a time bound everything in the window. A person
 * holds tens or hundreds of facts, not 100k: they are read through facts_user_idx, any word sufficing.
 */
export async function recallFacts(tx: Tx, userId: string, query: RecallQuery): Promise<RecalledFact[]> {
  const rows = await sqlRows<FactRow>(tx, recallFactsSql(userId, query));
  return rows.map(toRecalledFact);
}

/** The single statement behind recallFacts (exported for EXPLAIN in benchmarks). */
export function recallFactsSql(userId: string, query: RecallQuery) {
  const { words, phrase, tsTerms } = terms(query.query, isBounded(query));
  const vector = vectorLiteral(query.embedding);
  // As for entities: since when it holds if the person said so, else when they told it. (A person's
  // facts are read through facts_user_idx, so the coalesce() needs no index of its own.)
  const when = sql.raw("coalesce(happened_at, told_at)");
  const window = sql`${query.since ? sql`and ${when} >= ${query.since.toISOString()}::timestamptz` : sql``}
    ${query.before ? sql`and ${when} < ${query.before.toISOString()}::timestamptz` : sql``}`;
  const none = noRows("null::uuid as id", "0::bigint as rank");
  // Every fact at its real distance for the reference (exhaustive), else for a person holding few.
  const exactUpTo = query.exhaustive ? Number.MAX_SAFE_INTEGER : SKETCH_CANDIDATES;
  // Ranked by the embeddings' signs (in the row) first and only the closest SKETCH_CANDIDATES read their
  // out-of-line embedding for the real distance (every fact's, for a person holding no more).
  const nearest = vector
    ? sql`select f.id, f.embedding <=> ${PROBE} as distance from (
            select id from live where (select count(*) from live) <= ${exactUpTo}
            union all
            (select id from live where (select count(*) from live) > ${exactUpTo}
             order by sketch <~> ${PROBE_SKETCH} limit ${SKETCH_CANDIDATES})
          ) c join facts f on f.id = c.id where f.embedding is not null`
    : noRows("null::uuid as id", "null::float8 as distance");
  const fulltextHits = words.length
    ? sql`select id, row_number() over (order by ts_rank(search, q) desc, at desc, id) as rank
          from live, to_tsquery('simple', ${tsTerms.join(" | ")}) q
          where search @@ q order by rank limit ${CANDIDATES}`
    : none;
  // Misspelled words: the vector and full-text candidates re-ranked by word similarity (computing it
  // over every fact cost more than the rest of the statement). Only when none of them is similar does
  // the statement look further, through the trigram index (`<%`: pg_trgm's word-similarity threshold).
  const trigramHits = words.length
    ? sql`select id, rank() over (order by wsim desc) as rank from (
            select id, wsim from similar_words where wsim >= ${FACT_TRIGRAM_MATCH}
            union
            select id, word_similarity(${phrase}, search_key) from facts
            where user_id = ${userId} and superseded_by is null ${window} and ${phrase} <% search_key
              and not exists (select 1 from similar_words where wsim >= ${FACT_TRIGRAM_MATCH})
          ) s order by wsim desc, id limit ${CANDIDATES}`
    : none;
  // As for entities: with a time bound the window itself is a list ("what did I tell you last week?").
  const timeHits = isBounded(query)
    ? sql`select id, row_number() over (order by at desc, id) as rank from live order by at desc, id limit ${CANDIDATES}`
    : none;
  return sql`
    with
    ${probeCte(vector)},
    live as materialized (
      select id, ${when} as at, sketch, search from facts
      where user_id = ${userId} and superseded_by is null ${window}
    ),
    -- Materialized, as the CTEs below: the planner cannot then push a condition on the distance (or the
    -- similarity) down into a scan of all the person's facts and compute it for every row.
    nearest as materialized (${nearest}),
    vector_hits as materialized (
      select id, row_number() over (order by distance, id) as rank from nearest
      where distance <= ${MAX_VECTOR_DISTANCE} order by distance, id limit ${VECTOR_CANDIDATES}
    ),
    fulltext_hits as materialized (${fulltextHits}),
    similar_words as materialized (
      select f.id, ${words.length ? sql`word_similarity(${phrase}, f.search_key)` : sql`0::real`} as wsim
      from (select id from vector_hits union select id from fulltext_hits) c join facts f on f.id = c.id
    ),
    fused as (
      select id, sum(1.0 / (${RRF_K} + rank)) as rrf, array_agg(distinct kind) as matched_by from (
        select id, rank, 'vector' as kind from vector_hits
        union all select id, rank, 'fulltext' from fulltext_hits
        union all select id, rank, 'trigram' from (${trigramHits}) g
        union all select id, rank, 'time' from (${timeHits}) w
      ) hits group by id
    )
    select f.id, f.statement, f.category, f.subject, f.confidence, f.origin, f.told_at, f.happened_at,
           u.rrf + ${CONFIDENCE_WEIGHT}::float8 * f.confidence as score, u.matched_by,
           s.kind as source_kind, s.external_id as source_external_id, s.payload ->> 'text' as source_text, s.created_at as source_at
    from fused u
    join facts f on f.id = u.id
    left join sources s on s.id = f.source_id
    order by score desc, f.id
    limit ${query.limit}`;
}
