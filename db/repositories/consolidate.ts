// Nightly consolidation of a person's memory: entities of the same type whose names are near-copies
// ("The Hobbit" / "Hobbit", "Harry Potter and the Philosopher's Stone" / "…Philosophers Stone") are
// merged into the older one. Nothing is lost: the merged name becomes an alias, its properties fill
// gaps, its relations and events point at the survivor, and its source is listed on the survivor
// (the sources rows themselves are never touched). Different things with similar names — "Dune" and
// "Dune Messiah", "Rocky II" and "Rocky III" — stay apart.
//
// The work per person is bounded whatever they hold (issue 19, finding 2): at most MERGE_RECENT_LIMIT
// recently touched entities are compared a night, each with at most MERGE_NEIGHBOURS of its most alike
// older names (found through the per-person trigram index), and every statement of that person's
// transaction gives up after MERGE_STATEMENT_TIMEOUT_MS. "Recently touched" ends now: a row dated in the
// future (an import's clock, a bad row) is not recent, or it would crowd out the real ones every night.
import { sql } from "drizzle-orm";
import { sqlRows, type Tx } from "../database";

/** Trigram similarity from which two names of one type may be the same thing. */
const MERGE_SIMILARITY = 0.75;
/** …and, when both have embeddings, the cosine similarity they must also reach. */
const MERGE_COSINE = 0.9;
/** Recently touched entities compared per person a night, the most recent first. */
export const MERGE_RECENT_LIMIT = 200;
/** Older entities each one is compared with: its most alike names of the same type. */
export const MERGE_NEIGHBOURS = 5;
/** Longest any one statement of a person's consolidation may run (set for their transaction only). */
const MERGE_STATEMENT_TIMEOUT_MS = 5_000;

interface Pair {
  keep_id: string;
  drop_id: string;
  keep_name: string;
  drop_name: string;
  similarity: number;
  cosine: number | null;
}

interface Merge {
  keptId: string;
  mergedId: string;
}

export interface Consolidation {
  merges: Merge[];
  /** Candidate pairs compared: at most MERGE_RECENT_LIMIT × MERGE_NEIGHBOURS. */
  compared: number;
}

/**
 * Merges near-duplicates among the entities touched between `since` and `until` (against all of the
 * person's entities), within the bounds above. Run in the person's own Database.withUser transaction.
 */
export async function mergeNearDuplicates(tx: Tx, userId: string, window: { since: Date; until: Date }): Promise<Consolidation> {
  await tx.execute(sql`select set_config('statement_timeout', ${`${MERGE_STATEMENT_TIMEOUT_MS}ms`}, true)`);
  // search_name is the name with accents folded: what the per-person trigram index holds (the `%`
  // operator reaches it under row-level security because it is marked leakproof, db/sql/0400_planner.sql).
  const pairs = await sqlRows<Pair>(
    tx,
    sql`
    with recent as (
      select id, type, name, search_name, embedding, created_at from entities
      where user_id = ${userId} and status = 'active'
        and updated_at >= ${window.since.toISOString()} and updated_at <= ${window.until.toISOString()}
      order by updated_at desc, id
      limit ${MERGE_RECENT_LIMIT}
    )
    select a.id as keep_id, b.id as drop_id, a.name as keep_name, b.name as drop_name, a.similarity,
           case when a.embedding is not null and b.embedding is not null then 1 - (a.embedding <=> b.embedding) end as cosine
    from recent b
    cross join lateral (
      select c.id, c.name, c.embedding, similarity(c.search_name, b.search_name) as similarity
      from entities c
      where c.user_id = ${userId} and c.type = b.type and c.status = 'active' and c.id <> b.id
        and c.search_name % b.search_name
        and (c.created_at, c.id) < (b.created_at, b.id)
      order by similarity(c.search_name, b.search_name) desc, c.created_at, c.id
      limit ${MERGE_NEIGHBOURS}
    ) a
    order by b.created_at, b.id, a.similarity desc`,
  );

  const merges: Merge[] = [];
  const gone = new Set<string>();
  for (const pair of pairs) {
    if (gone.has(pair.keep_id) || gone.has(pair.drop_id) || !sameThing(pair)) continue;
    await mergeInto(tx, pair.keep_id, pair.drop_id);
    gone.add(pair.drop_id);
    merges.push({ keptId: pair.keep_id, mergedId: pair.drop_id });
  }
  return { merges, compared: pairs.length };
}

/** Whether two similar names of one type name the same thing. */
function sameThing(pair: Pick<Pair, "keep_name" | "drop_name" | "similarity" | "cosine">): boolean {
  const a = canonical(pair.keep_name);
  const b = canonical(pair.drop_name);
  if (a === b) return true;
  // A different number is a different thing (a sequel, a season, a year).
  if (numbers(a) !== numbers(b)) return false;
  return Number(pair.similarity) >= MERGE_SIMILARITY && (pair.cosine === null || Number(pair.cosine) >= MERGE_COSINE);
}

function canonical(name: string): string {
  return name
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    .replace(/['’`]s\b/g, "s")
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim()
    .replace(/^(the|a|an)\s+/, "");
}

function numbers(name: string): string {
  const roman = /\b(i{1,3}|iv|v|vi{0,3}|ix|x)\b/g;
  return [...(name.match(/\d+/g) ?? []), ...(name.match(roman) ?? [])].join(",");
}

async function mergeInto(tx: Tx, keepId: string, dropId: string): Promise<void> {
  await tx.execute(sql`update edges set from_id = ${keepId} where from_id = ${dropId}`);
  await tx.execute(sql`update edges set to_id = ${keepId} where to_id = ${dropId}`);
  await tx.execute(
    sql`update events set entity_ids = array_replace(entity_ids, ${dropId}::uuid, ${keepId}::uuid) where entity_ids @> array[${dropId}::uuid]`,
  );
  const rows = await sqlRows<{
    id: string;
    name: string;
    properties: Record<string, unknown>;
    source_id: string | null;
  }>(tx, sql`select id, name, properties, source_id from entities where id in (${keepId}, ${dropId})`);
  const keep = rows.find((r) => r.id === keepId);
  const drop = rows.find((r) => r.id === dropId);
  if (!keep || !drop) throw new Error(`mergeInto: entity ${keep ? dropId : keepId} not found`);
  // The merged entity's own aliases and merged sources carry over too (it may have been a survivor
  // before, or been captured with aliases), each listed once: a name captured again after a merge
  // and merged again the next night is not a second alias.
  const properties = {
    ...drop.properties,
    ...keep.properties,
    aliases: distinct([...listOf(keep.properties.aliases), ...listOf(drop.properties.aliases), drop.name]),
    mergedSources: distinct([
      ...listOf(keep.properties.mergedSources),
      ...listOf(drop.properties.mergedSources),
      ...(drop.source_id ? [drop.source_id] : []),
    ]),
  };
  await tx.execute(sql`update entities set properties = ${JSON.stringify(properties)}::jsonb, updated_at = now() where id = ${keepId}`);
  await tx.execute(sql`delete from entities where id = ${dropId}`);
}

function listOf(value: unknown): unknown[] {
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value : [value];
}

function distinct(values: unknown[]): unknown[] {
  const seen = new Set<string>();
  return values.filter((v) => {
    const key = JSON.stringify(v);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
