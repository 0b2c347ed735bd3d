// What both recall statements (entities: recall.ts, facts: recall-facts.ts) share: the question
// (RecallQuery), how many candidates each retriever brings and how they are fused, and the question's
// embedding, sent once per statement.
import { sql } from "drizzle-orm";

export interface RecallQuery {
  query: string;
  type?: string;
  limit: number;
  embedding: number[] | null;
  /** Only what happened — or, with no such date, was told — at or after this instant. */
  since?: Date;
  /** Only what happened — or was told — before this instant (exclusive). */
  before?: Date;
  /**
   * Every candidate scored the slow way — each row's real distance, every full-text match ranked — with
   * the same retrievers and fusion: the reference the fast path is measured against (recall@20 in
   * bench/recall.ts and tests/worker/recall-exact.test.ts). Never set by the tools.
   */
  exhaustive?: boolean;
  /**
   * The most rows a scope may hold to be ranked by its sketches (SCOPE_ROWS); a larger one walks HNSW.
   * Only tests set it, to reach the HNSW path without inserting SCOPE_ROWS rows on the embedded Postgres.
   */
  scopeRows?: number;
}

/**
 * Cosine distance past which a vector neighbour is noise rather than a match (cosine 0.5). Unrelated
 * texts sit near cosine 0.38 in bge-m3's space, and among 100k of a person's memories the likeliest of
 * them reach 0.42: at 0.6 those made up the rest of every answer with few true matches, a different
 * rest for each search (bench:recall's facts agreed with the exhaustive reference at 0.67).
 */
export const MAX_VECTOR_DISTANCE = 0.5;
/** Candidates each lexical retriever contributes before fusion. */
export const CANDIDATES = 50;
/** Nearest neighbours kept from HNSW (db/database.ts searches 100 wide: the best 20 of 100 candidates). */
export const VECTOR_CANDIDATES = 20;
/** Reciprocal-rank-fusion constant (Cormack et al.). */
export const RRF_K = 60;
/** Rows whose real embedding distance is read after ranking by sketch (10× the neighbours kept). */
export const SKETCH_CANDIDATES = 10 * VECTOR_CANDIDATES;

/**
 * The question's embedding, sent once: each statement's `probe` CTE, read through PROBE and PROBE_SKETCH.
 * Written out where each is used, the 4 KB vector went as four parameters, each parsed and then copied
 * through planning (bind took 1 ms more; bench:recall). An HNSW scan takes an InitPlan's value for
 * its order as it takes a constant.
 */
export const probeCte = (vector: string | null) =>
  sql`probe as materialized (select v, binary_quantize(v) as b from (select ${vector}::vector as v) p)`;
export const PROBE = sql.raw("(select v from probe)");
export const PROBE_SKETCH = sql.raw("(select b from probe)");

/** A branch that yields no row, with the columns (`null::uuid as id`, …) of the ones it stands for. */
export const noRows = (...columns: string[]) => sql.raw(`select ${columns.join(", ")} where false`);

/** Whether the question is bounded in time. */
export const isBounded = (query: Pick<RecallQuery, "since" | "before">) => query.since !== undefined || query.before !== undefined;

/** pgvector's text form, or null. */
export function vectorLiteral(embedding: number[] | null): string | null {
  return embedding ? `[${embedding.join(",")}]` : null;
}
