// Memory: entities, their provenance and relations. Every function takes a transaction that
// Database.withUser opened, so row-level security scopes it to one person; the explicit user id is
// only what new rows are stamped with (the policies refuse any other).
import { and, eq, inArray, sql } from "drizzle-orm";
import { sqlRows, type Tx } from "../database";
import { normalizeName } from "../search-key";
import { edges, entities, sources } from "../schema";
import { vectorLiteral } from "./recall-shared";

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
  /** When it happened, where the person said so; a repeat without one keeps the earlier date. */
  happenedAt?: Date | null;
  /** When the person told it, when that was not now (an imported conversation); a repeat keeps the earlier. */
  toldAt?: Date;
}

export { nameKeyFits, normalizeName } from "../search-key";
export { recall, recallEntities, recallMemory, recallSql, type RecallResult, type RecalledEntity } from "./recall";

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
 * Records a person's message (its `sources` row, its words in the payload's `text`) where the
 * background functions read it (messageText): an event carries only its kind and external id, so the
 * words stay in Postgres, under row-level security, and go with the account. A row a tool already
 * recorded for the same message keeps its payload, and gets the text if it had none.
 */
export async function recordMessage(tx: Tx, userId: string, ref: { kind: string; externalId: string }, text: string): Promise<void> {
  await tx.execute(sql`
    insert into sources (user_id, kind, external_id, payload)
    values (${userId}, ${ref.kind}, ${ref.externalId}, jsonb_build_object('text', ${text}::text))
    on conflict (user_id, kind, external_id) do update
      set payload = case when sources.payload ? 'text' then sources.payload else sources.payload || excluded.payload end`);
}

/** The words of a message recordMessage (or a tool) recorded; null when this person has no such message. */
export async function messageText(tx: Tx, userId: string, ref: { kind: string; externalId: string }): Promise<string | null> {
  const [row] = await sqlRows<{ text: string | null }>(
    tx,
    sql`select payload ->> 'text' as text from sources where user_id = ${userId} and kind = ${ref.kind} and external_id = ${ref.externalId}`,
  );
  return row?.text ?? null;
}

/**
 * Deletes a message's row once nothing came of it (no memory, fact, relation or event points at it):
 * its words were needed only until fact-extract read them. A row something came from is provenance and
 * stays. The references are checked in the same statement; a tool that records the message again
 * afterwards simply makes a new row.
 */
export async function forgetUnusedMessage(tx: Tx, userId: string, ref: { kind: string; externalId: string }): Promise<boolean> {
  const rows = await sqlRows<{ id: string }>(
    tx,
    sql`
    delete from sources s
    where s.user_id = ${userId} and s.kind = ${ref.kind} and s.external_id = ${ref.externalId}
      and not exists (select 1 from entities e where e.user_id = ${userId} and e.source_id = s.id)
      and not exists (select 1 from facts f where f.user_id = ${userId} and f.source_id = s.id)
      and not exists (select 1 from events v where v.user_id = ${userId} and v.source_id = s.id)
      and not exists (select 1 from edges r where r.user_id = ${userId} and r.source_id = s.id)
    returning s.id`,
  );
  return rows.length > 0;
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
 * revives an archived entity and keeps the first name, source and told_at (when it was first told).
 */
export async function captureEntity(tx: Tx, userId: string, input: CaptureInput): Promise<{ entityId: string; created: boolean }> {
  const rows = await sqlRows<{ id: string; created: boolean }>(
    tx,
    sql`
    insert into entities (user_id, type, name, normalized_name, properties, embedding, source_id, happened_at, told_at)
    values (${userId}, ${input.type}, ${input.name.trim()}, ${normalizeName(input.name)},
            ${JSON.stringify(input.properties ?? {})}::jsonb, ${vectorLiteral(input.embedding)}::vector, ${input.sourceId},
            ${input.happenedAt?.toISOString() ?? null}::timestamptz, coalesce(${input.toldAt?.toISOString() ?? null}::timestamptz, now()))
    on conflict (user_id, type, normalized_name) do update set
      properties = entities.properties || excluded.properties,
      told_at = least(entities.told_at, excluded.told_at),
      happened_at = coalesce(excluded.happened_at, entities.happened_at),
      embedding = coalesce(excluded.embedding, entities.embedding),
      source_id = coalesce(entities.source_id, excluded.source_id),
      status = 'active'
    returning id, (xmax = 0) as created`,
  );
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
