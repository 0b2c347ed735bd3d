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

/** Longest name key (normalizeName, UTF-8) stored: well under the 2.7 kB a btree index entry may hold. */
const MAX_NAME_KEY_BYTES = 1000;
const UTF8 = new TextEncoder();

/** Whether `name`'s key is short enough to index (some characters grow under NFKC: U+FDFA is 18 letters). */
export function nameKeyFits(name: string): boolean {
  return UTF8.encode(normalizeName(name)).length <= MAX_NAME_KEY_BYTES;
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
 * Records a source only if it is new: its id for the first caller, null when (kind, external id) was
 * already recorded. The unique row is the claim that makes ingestion and deliveries happen once.
 */
export async function claimSource(tx: Tx, userId: string, ref: SourceRef): Promise<string | null> {
  const [row] = await tx
    .insert(sources)
    .values({ userId, kind: ref.kind, externalId: ref.externalId, payload: ref.payload ?? {} })
    .onConflictDoNothing({ target: [sources.userId, sources.kind, sources.externalId] })
    .returning({ id: sources.id });
  return row?.id ?? null;
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

/** The names of the person's entities among `ids`, whatever their status (unknown ids are left out). */
export async function entityNames(tx: Tx, ids: string[]): Promise<string[]> {
  const rows = await tx.select({ name: entities.name }).from(entities).where(inArray(entities.id, ids));
  return rows.map((r) => r.name);
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

/**
 * Relates two of the person's entities; null when either is not theirs. With an idempotency key (a
 * turn's write: source message + tool + arguments) a second call returns the edge the first one made
 * instead of adding another, so a turn re-run after a crash leaves one edge.
 */
export async function relateEntities(
  tx: Tx,
  userId: string,
  relation: { fromId: string; toId: string; type: string; sourceId: string | null; idempotencyKey?: string | null },
): Promise<string | null> {
  const found = await tx
    .select({ id: entities.id })
    .from(entities)
    .where(inArray(entities.id, [relation.fromId, relation.toId]));
  if (new Set(found.map((r) => r.id)).size !== new Set([relation.fromId, relation.toId]).size) return null;
  const key = relation.idempotencyKey ?? null;
  // (user_id, idempotency_key) is unique and includes the person: under row-level security a key can
  // only ever meet this person's own row, which the fallback select can see.
  const [row] = await tx
    .insert(edges)
    .values({ userId, fromId: relation.fromId, toId: relation.toId, type: relation.type, sourceId: relation.sourceId, idempotencyKey: key })
    .onConflictDoNothing({ target: [edges.userId, edges.idempotencyKey] })
    .returning({ id: edges.id });
  if (row) return row.id;
  if (key === null) return null;
  const [existing] = await tx
    .select({ id: edges.id })
    .from(edges)
    .where(and(eq(edges.userId, userId), eq(edges.idempotencyKey, key)));
  return existing?.id ?? null;
}

/**
 * Records a reminder to deliver at `at`. With an idempotency key (a turn's write: source message + tool
 * + arguments) a second call returns the same event id instead of adding a second reminder; background
 * functions pass none (null never conflicts).
 */
export async function createReminder(
  tx: Tx,
  userId: string,
  reminder: { text: string; at: Date; sourceId: string | null; idempotencyKey?: string | null },
): Promise<string> {
  const key = reminder.idempotencyKey ?? null;
  const [row] = await tx
    .insert(events)
    .values({ userId, kind: "reminder", occurredAt: reminder.at, payload: { text: reminder.text }, status: "scheduled", sourceId: reminder.sourceId, idempotencyKey: key })
    .onConflictDoNothing({ target: [events.userId, events.idempotencyKey] })
    .returning({ id: events.id });
  if (row) return row.id;
  const [existing] = key
    ? await tx
        .select({ id: events.id })
        .from(events)
        .where(and(eq(events.userId, userId), eq(events.idempotencyKey, key)))
    : [];
  if (!existing) throw new Error("createReminder returned no row");
  return existing.id;
}

/** Cosine distance past which a vector neighbour is noise rather than a match. */
const MAX_VECTOR_DISTANCE = 0.6;
/** Candidates each lexical retriever contributes before fusion. */
const CANDIDATES = 50;
/** Nearest neighbours taken from HNSW (db/database.ts sets the same ef_search). */
const VECTOR_CANDIDATES = 20;
/** Reciprocal-rank-fusion constant (Cormack et al.). */
const RRF_K = 60;
/** An exact name match outranks any fused score (one list's top rank is 1/61 ≈ 0.016). */
const EXACT_NAME_BONUS = 0.05;
/** Full-text matches ranked per query at most. */
const FULLTEXT_RANKED = 200;
/** Trigram similarity from which a name counts as a (misspelled) match. */
const TRIGRAM_MATCH = 0.3;
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
export async function recallEntities(tx: Tx, userId: string, query: RecallQuery): Promise<RecalledEntity[]> {
  // Database transactions already set hnsw.iterative_scan and hnsw.ef_search (= VECTOR_CANDIDATES).
  const rows = (await tx.execute(recallSql(userId, query))) as unknown as RecallRow[];
  return rows.map(toRecalled);
}

/** The single statement behind recallEntities (exported for EXPLAIN in benchmarks). */
export function recallSql(userId: string, query: RecallQuery) {
  // Postgres text cannot hold NUL: a query carrying one would fail the whole statement.
  query = { ...query, query: query.query.replaceAll("\u0000", "") };
  const normalized = normalizeName(query.query);
  const words = normalized
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0 && !STOPWORDS.has(w))
    .slice(0, 12);
  const phrase = words.join(" ");
  const vector = vectorLiteral(query.embedding);
  // Row-level security already limits every scan to this person; repeating "user_id = <constant>"
  // gives the planner the person's real row count (the policy's setting is opaque to it), so it walks
  // the HNSW and GIN indexes instead of reading all of the person's rows through the btree.
  // The type filter is only present when a type is given, for the same reason.
  const scope = sql`user_id = ${userId} and status = 'active' ${query.type ? sql`and type = ${query.type}` : sql``}`;
  const none = sql`select null::uuid as id, null::text as normalized_name, 0::bigint as rank where false`;

  const vectorHits = vector
    ? sql`select id, normalized_name, row_number() over (order by distance) as rank from (
          select id, normalized_name, embedding <=> ${vector}::vector as distance from entities
          where ${scope} order by embedding <=> ${vector}::vector limit ${VECTOR_CANDIDATES}
        ) nearest where distance <= ${MAX_VECTOR_DISTANCE}`
    : none;
  // Every word must appear, the last one as a prefix: selective enough for the GIN index.
  const tsQuery = words.map((w, i) => (i === words.length - 1 ? `${w}:*` : w)).join(" & ");
  const fulltextHits = words.length
    ? sql`select id, normalized_name, row_number() over (order by ts_rank(search, q) desc) as rank
          from (
            -- Ranking is the costly part; a very common word ranks at most this many matches.
            select id, normalized_name, search from entities
            where ${scope} and search @@ to_tsquery('simple', ${tsQuery}) limit ${FULLTEXT_RANKED}
          ) matches, to_tsquery('simple', ${tsQuery}) q
          order by ts_rank(search, q) desc limit ${CANDIDATES}`
    : none;
  // Misspellings ("Solaaris"): the vector and full-text candidates are re-ranked by trigram
  // similarity, which costs nothing; only when none of them is name-like does the statement fall
  // back to a trigram index scan over all the person's names (a one-time filter skips it otherwise).
  // (A typed question already lists every entity of the type, so it never needs the fallback.)
  const fallback = query.type
    ? sql``
    : sql`union
          select id, similarity(normalized_name, ${phrase}) as sim from entities
          where ${scope} and normalized_name % ${phrase}
            and not exists (select 1 from fuzzy where sim >= ${TRIGRAM_MATCH})`;
  const trigramHits = words.length
    ? sql`select id, row_number() over (order by sim desc) as rank from (
          select id, sim from fuzzy where sim >= ${TRIGRAM_MATCH}
          ${fallback}
          order by sim desc limit ${CANDIDATES}
        ) t`
    : none;
  const typeHits = query.type
    ? sql`select id, null::text as normalized_name, row_number() over (order by updated_at desc) as rank
          from entities where ${scope} order by updated_at desc limit ${Math.max(query.limit, CANDIDATES)}`
    : none;

  return sql`
    with
    vector_hits as materialized (${vectorHits}),
    fulltext_hits as materialized (${fulltextHits}),
    fuzzy as materialized (
      select id, similarity(normalized_name, ${phrase}) as sim
      from (select id, normalized_name from vector_hits union select id, normalized_name from fulltext_hits) c
    ),
    trigram_hits as (${trigramHits}),
    type_hits as (${typeHits}),
    fused as (
      select id, sum(1.0 / (${RRF_K} + rank)) as rrf, array_agg(distinct kind) as matched_by from (
        select id, rank, 'vector' as kind from vector_hits
        union all select id, rank, 'fulltext' from fulltext_hits
        union all select id, rank, 'trigram' from trigram_hits
        union all select id, rank, 'type' from type_hits
      ) hits group by id
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

/** The person's most recently touched active memories, optionally of one type. */
export async function recentEntities(tx: Tx, limit: number, type?: string): Promise<Array<{ id: string; type: string; name: string }>> {
  const rows = await tx
    .select({ id: entities.id, type: entities.type, name: entities.name })
    .from(entities)
    .where(and(eq(entities.status, "active"), type ? eq(entities.type, type) : undefined))
    .orderBy(sql`${entities.updatedAt} desc`)
    .limit(limit);
  return rows;
}

export interface MemoryListItem {
  id: string;
  type: string;
  name: string;
  properties: Record<string, unknown>;
  updatedAt: string;
  source: { kind: string; excerpt: string | null; at: string } | null;
}

/** The person's active memories, newest first, optionally of one type, with where each came from. */
export async function listMemories(tx: Tx, options: { type?: string; limit: number }): Promise<MemoryListItem[]> {
  const rows = await tx
    .select({
      id: entities.id,
      type: entities.type,
      name: entities.name,
      properties: entities.properties,
      updatedAt: entities.updatedAt,
      sourceKind: sources.kind,
      sourceText: sql<string | null>`${sources.payload} ->> 'text'`,
      sourceAt: sources.createdAt,
    })
    .from(entities)
    .leftJoin(sources, eq(sources.id, entities.sourceId))
    .where(and(eq(entities.status, "active"), options.type ? eq(entities.type, options.type) : undefined))
    .orderBy(sql`${entities.updatedAt} desc`)
    .limit(options.limit);
  return rows.map((r) => ({
    id: r.id,
    type: r.type,
    name: r.name,
    properties: r.properties,
    updatedAt: r.updatedAt.toISOString(),
    source: r.sourceKind ? { kind: r.sourceKind, excerpt: r.sourceText, at: (r.sourceAt ?? r.updatedAt).toISOString() } : null,
  }));
}
