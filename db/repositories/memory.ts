// Memory: entities, their provenance and relations. Every function takes a transaction that
// Database.withUser opened, so row-level security scopes it to one person; the explicit user id is
// only what new rows are stamped with (the policies refuse any other).
import { and, eq, inArray, sql } from "drizzle-orm";
import type { Tx } from "../database";
import { edges, entities, events, sources } from "../schema";

export interface SourceRef {
  kind: string;
  externalId: string;
  payload?: Record<string, unknown>;
}

export interface CaptureInput {
  type: string;
  name: string;
  properties?: Record<string, unknown>;
  embedding: number[] | null;
  sourceId: string | null;
}

export interface RecallQuery {
  query: string;
  type?: string;
  limit: number;
  embedding: number[] | null;
}

export type MatchKind = "vector" | "fulltext" | "trigram" | "type";

export interface RecalledEntity {
  entity: {
    id: string;
    type: string;
    name: string;
    properties: Record<string, unknown>;
    createdAt: string;
    updatedAt: string;
  };
  score: number;
  matchedBy: MatchKind[];
  source: { kind: string; externalId: string; excerpt: string | null; at: string } | null;
}

/** Lowercase, NFKC, single spaces, no surrounding quotes or punctuation: "“Dune”." and "dune" are one. */
export function normalizeName(name: string): string {
  return name
    .normalize("NFKC")
    .toLowerCase()
    .replace(/\s+/g, " ")
    .replace(/^[\s"'“”‘’«»`.,;:!?()[\]-]+|[\s"'“”‘’«»`.,;:!?()[\]-]+$/g, "")
    .trim();
}

/** Records where something came from; the same (kind, external id) twice is one row. */
export async function recordSource(tx: Tx, userId: string, ref: SourceRef): Promise<string> {
  const [row] = await tx
    .insert(sources)
    .values({ userId, kind: ref.kind, externalId: ref.externalId, payload: ref.payload ?? {} })
    .onConflictDoUpdate({
      target: [sources.userId, sources.kind, sources.externalId],
      set: { kind: sql`excluded.kind` },
    })
    .returning({ id: sources.id });
  if (!row) throw new Error("recordSource returned no row");
  return row.id;
}

/**
 * Upserts an entity on (user, type, normalized name): never a duplicate. A repeat merges properties,
 * revives an archived entity and keeps the first name and source.
 */
export async function captureEntity(tx: Tx, userId: string, input: CaptureInput): Promise<{ entityId: string; created: boolean }> {
  const rows = (await tx.execute(sql`
    insert into entities (user_id, type, name, normalized_name, properties, embedding, source_id)
    values (${userId}, ${input.type}, ${input.name.trim()}, ${normalizeName(input.name)},
            ${JSON.stringify(input.properties ?? {})}::jsonb, ${vectorLiteral(input.embedding)}::vector, ${input.sourceId})
    on conflict (user_id, type, normalized_name) do update set
      properties = entities.properties || excluded.properties,
      embedding = coalesce(excluded.embedding, entities.embedding),
      source_id = coalesce(entities.source_id, excluded.source_id),
      status = 'active'
    returning id, (xmax = 0) as created`)) as unknown as Array<{ id: string; created: boolean }>;
  const row = rows[0];
  if (!row) throw new Error("captureEntity returned no row");
  return { entityId: row.id, created: row.created };
}

/** Merges `properties` into an active entity; false when there is no such entity (for this person). */
export async function updateEntityProperties(tx: Tx, entityId: string, properties: Record<string, unknown>): Promise<boolean> {
  const rows = await tx
    .update(entities)
    .set({ properties: sql`${entities.properties} || ${JSON.stringify(properties)}::jsonb` })
    .where(and(eq(entities.id, entityId), eq(entities.status, "active")))
    .returning({ id: entities.id });
  return rows.length > 0;
}

/** Archives an entity: it is never recalled again, but its history stays. */
export async function archiveEntity(tx: Tx, entityId: string): Promise<boolean> {
  const rows = await tx
    .update(entities)
    .set({ status: "archived" })
    .where(and(eq(entities.id, entityId), eq(entities.status, "active")))
    .returning({ id: entities.id });
  return rows.length > 0;
}

/** Relates two of the person's entities; null when either is not theirs. */
export async function relateEntities(
  tx: Tx,
  userId: string,
  relation: { fromId: string; toId: string; type: string; sourceId: string | null },
): Promise<string | null> {
  const found = await tx
    .select({ id: entities.id })
    .from(entities)
    .where(inArray(entities.id, [relation.fromId, relation.toId]));
  if (new Set(found.map((r) => r.id)).size !== new Set([relation.fromId, relation.toId]).size) return null;
  const [row] = await tx
    .insert(edges)
    .values({ userId, fromId: relation.fromId, toId: relation.toId, type: relation.type, sourceId: relation.sourceId })
    .returning({ id: edges.id });
  return row?.id ?? null;
}

/** Records a reminder to deliver at `at`. */
export async function createReminder(tx: Tx, userId: string, reminder: { text: string; at: Date; sourceId: string | null }): Promise<string> {
  const [row] = await tx
    .insert(events)
    .values({ userId, kind: "reminder", occurredAt: reminder.at, payload: { text: reminder.text }, status: "scheduled", sourceId: reminder.sourceId })
    .returning({ id: events.id });
  if (!row) throw new Error("createReminder returned no row");
  return row.id;
}

/** Cosine distance past which a vector neighbour is noise rather than a match. */
const MAX_VECTOR_DISTANCE = 0.6;
/** Candidates each retriever contributes before fusion. */
const CANDIDATES = 50;
/** Reciprocal-rank-fusion constant (Cormack et al.). */
const RRF_K = 60;
/** An exact name match outranks any fused score (one list's top rank is 1/61 ≈ 0.016). */
const EXACT_NAME_BONUS = 0.05;
/** Small nudge toward what was touched recently (decays over ~30 days). */
const RECENCY_WEIGHT = 0.002;

const STOPWORDS = new Set(
  "a an and are as at be book books by did do does for from have how i in is it me my of on or read the to was what when where which who why with you your remember know about".split(" "),
);

/**
 * Hybrid recall over the person's active entities: pgvector cosine (HNSW), full text and trigram
 * similarity on names, and — when a type is given — every entity of that type, fused with
 * reciprocal-rank fusion plus a small recency term.
 */
export async function recallEntities(tx: Tx, query: RecallQuery): Promise<RecalledEntity[]> {
  // Lets the HNSW scan keep going until enough rows survive the RLS and type filters (pgvector ≥ 0.8).
  await tx.execute(sql`select set_config('hnsw.iterative_scan', 'relaxed_order', true)`);
  const rows = (await tx.execute(recallSql(query))) as unknown as RecallRow[];
  return rows.map(toRecalled);
}

/** The single statement behind recallEntities (exported for EXPLAIN in benchmarks). */
export function recallSql(query: RecallQuery) {
  const normalized = normalizeName(query.query);
  const words = normalized
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0 && !STOPWORDS.has(w))
    .slice(0, 12);
  const phrase = words.join(" ");
  const vector = vectorLiteral(query.embedding);
  // Each retriever is only part of the statement when it can contribute, and the type filter only
  // when a type is given: optional predicates written as "($1 is null or …)" make the planner
  // misjudge row counts and skip the HNSW and trigram indexes.
  const ofType = query.type ? sql`and type = ${query.type}` : sql``;
  const retrievers = [];
  if (vector) {
    retrievers.push(sql`select id, row_number() over (order by distance) as rank, 'vector' as kind from (
        select id, embedding <=> ${vector}::vector as distance from entities
        where status = 'active' ${ofType}
        order by embedding <=> ${vector}::vector limit ${CANDIDATES}
      ) nearest where distance <= ${MAX_VECTOR_DISTANCE}`);
  }
  if (words.length > 0) {
    // Every word must appear (the last one as a prefix): selective enough for the GIN index; loose
    // matches are the trigram retriever's job.
    const tsQuery = words.map((w, i) => (i === words.length - 1 ? `${w}:*` : w)).join(" & ");
    retrievers.push(sql`select id, row_number() over (order by ts_rank_cd(search, q) desc) as rank, 'fulltext' as kind
        from entities, to_tsquery('simple', ${tsQuery}) q
        where search @@ q and status = 'active' ${ofType}
        order by ts_rank_cd(search, q) desc limit ${CANDIDATES}`);
    // Whole-name similarity catches misspellings ("Solaaris"); word-level prefixes are covered by full text.
    retrievers.push(sql`select id, row_number() over (order by similarity(normalized_name, ${phrase}) desc) as rank, 'trigram' as kind
        from entities
        where normalized_name % ${phrase} and status = 'active' ${ofType}
        order by similarity(normalized_name, ${phrase}) desc limit ${CANDIDATES}`);
  }
  if (query.type) {
    retrievers.push(sql`select id, row_number() over (order by updated_at desc) as rank, 'type' as kind
        from entities where type = ${query.type} and status = 'active'
        order by updated_at desc limit ${Math.max(query.limit, CANDIDATES)}`);
  }
  if (retrievers.length === 0) return sql`select null::uuid as id where false`;
  const hits = sql.join(retrievers.map((r) => sql`(${r})`), sql` union all `);

  return sql`
    with fused as (
      select id, sum(1.0 / (${RRF_K} + rank)) as rrf, array_agg(distinct kind) as matched_by
      from (${hits}) hits group by id
    )
    select e.id, e.type, e.name, e.properties, e.created_at, e.updated_at,
           f.rrf
             + case when e.normalized_name = ${normalized} then ${EXACT_NAME_BONUS}::float8 else 0 end
             + ${RECENCY_WEIGHT}::float8 * exp(-extract(epoch from now() - e.updated_at) / (30 * 86400)) as score,
           f.matched_by, s.kind as source_kind, s.external_id as source_external_id,
           s.payload ->> 'text' as source_text, s.created_at as source_at
    from fused f
    join entities e on e.id = f.id
    left join sources s on s.id = e.source_id
    order by score desc
    limit ${query.limit}`;
}

type RecallRow = {
    id: string;
    type: string;
    name: string;
    properties: Record<string, unknown>;
    created_at: string | Date;
    updated_at: string | Date;
    score: string | number;
    matched_by: MatchKind[] | string;
    source_kind: string | null;
    source_external_id: string | null;
    source_text: string | null;
    source_at: string | Date | null;
};

function toRecalled(row: RecallRow): RecalledEntity {
  return {
    entity: {
      id: row.id,
      type: row.type,
      name: row.name,
      properties: row.properties,
      createdAt: iso(row.created_at),
      updatedAt: iso(row.updated_at),
    },
    score: Number(Number(row.score).toFixed(5)),
    matchedBy: (Array.isArray(row.matched_by) ? row.matched_by : parseTextArray(row.matched_by)).sort() as MatchKind[],
    source:
      row.source_kind && row.source_external_id
        ? { kind: row.source_kind, externalId: row.source_external_id, excerpt: row.source_text, at: iso(row.source_at ?? row.created_at) }
        : null,
  };
}

/** pgvector's text form, or null. */
function vectorLiteral(embedding: number[] | null): string | null {
  return embedding ? `[${embedding.join(",")}]` : null;
}

function iso(value: string | Date): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

/** Postgres text[] output ("{a,b}") when the driver has not parsed it. */
function parseTextArray(value: string): string[] {
  return value.replace(/^\{|\}$/g, "").split(",").filter(Boolean);
}
