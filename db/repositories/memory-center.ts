// The web app's memory center: pages of memories, one memory with where it was learned, its relations
// and events, edits, and restoring a forgotten memory. Like db/repositories/memory.ts, every function
// takes a transaction that Database.withUser opened (row-level security scopes it to one person); the
// explicit user id only repeats that scope for the planner.
import { sql, type SQL } from "drizzle-orm";
import { sqlRows, type Tx } from "../database";
import { iso, isoOrNull } from "../timestamps";
import { MAIL_SOURCE_KIND } from "./mail";
import { normalizeName } from "./memory";

/** Source kinds of conversations imported from other assistants (db/repositories/conversation-imports.ts). */
const IMPORTED_KINDS = new Set(["chatgpt", "claude"]);

interface MemorySource {
  kind: string;
  externalId: string;
  excerpt: string | null;
  at: string;
  /** The app that wrote it through MCP (source kind "mcp"), by the name it registered with. */
  app?: string;
  /** The conversation it was said in, for one imported from another assistant (kinds chatgpt, claude). */
  title?: string;
}

export interface MemoryItem {
  id: string;
  type: string;
  name: string;
  properties: Record<string, unknown>;
  status: "active" | "archived";
  createdAt: string;
  updatedAt: string;
  /** When the person told Soma (the source message's time for older rows). */
  toldAt: string;
  /** When it happened, if the person said so. */
  happenedAt: string | null;
  source: MemorySource | null;
}

export interface MemoryPageQuery {
  type?: string;
  /** When it happened else when it was told — coalesce(happened_at, told_at) — at or after `from` (inclusive), before `to` (exclusive). */
  from?: Date;
  to?: Date;
  cursor?: string;
  limit: number;
}

interface MemoryRelation {
  id: string;
  type: string;
  /** "out": this memory → other; "in": other → this memory. */
  direction: "out" | "in";
  /** fromEmail: its name was written by an email's sender; fromApp: by another app, through MCP. */
  other: { id: string; type: string; name: string; status: string; fromEmail?: true; fromApp?: true };
  since: string;
  until: string | null;
}

interface MemoryEvent {
  id: string;
  kind: string;
  status: string;
  occurredAt: string;
  payload: Record<string, unknown>;
}

export interface MemoryDetail {
  memory: MemoryItem;
  relations: MemoryRelation[];
  events: MemoryEvent[];
}

export type EditResult =
  | { status: "edited"; memory: MemoryItem }
  | { status: "not_found" }
  | { status: "conflict"; other: { id: string; type: string; name: string; status: string } };

/** A cursor that does not parse: the caller answers 400. */
export class InvalidCursorError extends Error {
  constructor() {
    super("The cursor is not one this API handed out.");
    this.name = "InvalidCursorError";
  }
}

type ItemRow = {
  id: string;
  type: string;
  name: string;
  properties: Record<string, unknown>;
  status: "active" | "archived";
  created_at: string | Date;
  updated_at: string | Date;
  told_at: string | Date;
  happened_at: string | Date | null;
  cursor_at: string;
  source_kind: string | null;
  source_external_id: string | null;
  source_text: string | null;
  source_app: string | null;
  source_title: string | null;
  source_at: string | Date | null;
};

type RelationRow = {
  id: string;
  type: string;
  valid_from: string | Date;
  valid_to: string | Date | null;
  direction: "out" | "in";
  other_id: string;
  other_type: string;
  other_name: string;
  other_status: string;
  other_source_kind: string | null;
};

type EventRow = { id: string; kind: string; status: string; occurred_at: string | Date; payload: Record<string, unknown> };

const ITEM_COLUMNS = sql`e.id, e.type, e.name, e.properties, e.status, e.created_at, e.updated_at, e.told_at, e.happened_at,
  to_char(e.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as cursor_at,
  s.kind as source_kind, s.external_id as source_external_id, s.payload ->> 'text' as source_text,
  s.payload ->> 'app' as source_app, s.payload ->> 'title' as source_title,
  -- An imported message was said when the other assistant's export says, not when it arrived.
  coalesce(case when s.kind in ('chatgpt', 'claude', 'pasted') then (s.payload ->> 'at')::timestamptz end, s.created_at) as source_at`;

/**
 * One page of the person's active memories, newest learned first. Keyset paging on (created_at, id):
 * the cursor keeps its place while memories are added or forgotten, and costs the same on page 100.
 */
export async function listMemoryPage(
  tx: Tx,
  userId: string,
  query: MemoryPageQuery,
): Promise<{ memories: MemoryItem[]; nextCursor: string | null }> {
  const rows = await sqlRows<ItemRow>(tx, memoryPageSql(userId, query));
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  return { memories: page.map(toItem), nextCursor: rows.length > query.limit && last ? encodeCursor(last.cursor_at, last.id) : null };
}

/**
 * The statement behind listMemoryPage (exported for its plan's test): one more than a page, newest
 * learned first, read backwards from the cursor in (user_id, created_at, id) (migration 0024).
 */
export function memoryPageSql(userId: string, query: MemoryPageQuery): SQL {
  const after = query.cursor ? decodeCursor(query.cursor) : null;
  const conditions: SQL[] = [sql`e.user_id = ${userId}`, sql`e.status = 'active'`];
  if (query.type) conditions.push(sql`e.type = ${query.type}`);
  // recall_at (happened, else told) is indexed with user_id, so a range is an index scan under RLS.
  if (query.from) conditions.push(sql`e.recall_at >= ${query.from.toISOString()}::timestamptz`);
  if (query.to) conditions.push(sql`e.recall_at < ${query.to.toISOString()}::timestamptz`);
  if (after) conditions.push(sql`(e.created_at, e.id) < (${after.at}::timestamptz, ${after.id}::uuid)`);
  return sql`
    select ${ITEM_COLUMNS}
    from entities e left join sources s on s.id = e.source_id
    where ${sql.join(conditions, sql` and `)}
    order by e.created_at desc, e.id desc
    limit ${query.limit + 1}`;
}

/** The types the person's active memories have, most used first (what the type filter offers). */
export async function memoryTypes(tx: Tx, userId: string): Promise<Array<{ type: string; count: number }>> {
  const rows = await sqlRows<{ type: string; count: number }>(
    tx,
    sql`
    select type, count(*)::int as count from entities
    where user_id = ${userId} and status = 'active'
    group by type order by count(*) desc, type`,
  );
  return rows.map((r) => ({ type: r.type, count: Number(r.count) }));
}

/** One memory, active or forgotten, with its source, relations and events; null when it is not the person's. */
export async function memoryDetail(tx: Tx, userId: string, id: string): Promise<MemoryDetail | null> {
  const memory = await memoryItem(tx, id);
  if (!memory) return null;
  const relations = await sqlRows<RelationRow>(
    tx,
    sql`
    select g.id, g.type, g.valid_from, g.valid_to, case when g.from_id = ${id}::uuid then 'out' else 'in' end as direction,
           o.id as other_id, o.type as other_type, o.name as other_name, o.status as other_status, os.kind as other_source_kind
    from edges g
    join entities o on o.id = case when g.from_id = ${id}::uuid then g.to_id else g.from_id end
    left join sources os on os.id = o.source_id
    where g.user_id = ${userId} and (g.from_id = ${id}::uuid or g.to_id = ${id}::uuid)
    order by g.valid_from desc
    limit 100`,
  );
  const events = await sqlRows<EventRow>(
    tx,
    sql`
    select id, kind, status, occurred_at, payload from events
    where user_id = ${userId} and entity_ids @> array[${id}::uuid]
    order by occurred_at desc
    limit 50`,
  );
  return {
    memory,
    relations: relations.map((r) => ({
      id: r.id,
      type: r.type,
      direction: r.direction,
      other: {
        id: r.other_id,
        type: r.other_type,
        name: r.other_name,
        status: r.other_status,
        // Its name was written by an email's sender: whoever shows it to a model fences it.
        ...(r.other_source_kind === MAIL_SOURCE_KIND ? { fromEmail: true as const } : {}),
        ...(r.other_source_kind === "mcp" ? { fromApp: true as const } : {}),
      },
      since: iso(r.valid_from),
      until: isoOrNull(r.valid_to),
    })),
    events: events.map((e) => ({ id: e.id, kind: e.kind, status: e.status, occurredAt: iso(e.occurred_at), payload: e.payload })),
  };
}

/**
 * Renames, retypes or rewrites the details of an active memory. The (type, name) key stays unique per
 * person, forgotten memories included (a capture would revive them): a collision is reported, not
 * merged. `embedding` replaces the stored one when the name or type changed (null when the embedder
 * failed: memory-consolidate fills it in).
 */
export async function editMemory(
  tx: Tx,
  userId: string,
  id: string,
  changes: { name?: string; type?: string; properties?: Record<string, unknown>; embedding?: number[] | null },
): Promise<EditResult> {
  const current = await memoryItem(tx, id);
  if (current?.status !== "active") return { status: "not_found" };
  const name = changes.name?.trim() ?? current.name;
  const type = changes.type ?? current.type;
  const normalized = normalizeName(name);
  const rekeyed = type !== current.type || normalized !== normalizeName(current.name);
  if (rekeyed) {
    const [other] = await sqlRows<MemoryRelation["other"]>(
      tx,
      sql`
      select id, type, name, status from entities
      where user_id = ${userId} and type = ${type} and normalized_name = ${normalized} and id <> ${id}::uuid`,
    );
    if (other) return { status: "conflict", other };
  }
  const sets: SQL[] = [sql`name = ${name}`, sql`normalized_name = ${normalized}`, sql`type = ${type}`];
  if (changes.properties) sets.push(sql`properties = ${JSON.stringify(changes.properties)}::jsonb`);
  if (changes.embedding !== undefined) sets.push(sql`embedding = ${changes.embedding ? `[${changes.embedding.join(",")}]` : null}::vector`);
  await tx.execute(sql`update entities set ${sql.join(sets, sql`, `)} where id = ${id}::uuid`);
  const memory = await memoryItem(tx, id);
  if (!memory) throw new Error("editMemory lost the row it updated");
  return { status: "edited", memory };
}

/** Brings a forgotten memory back (the undo of archiving); false when there is no such forgotten memory. */
export async function restoreMemory(tx: Tx, id: string): Promise<boolean> {
  const rows = await sqlRows<{ id: string }>(
    tx,
    sql`update entities set status = 'active' where id = ${id}::uuid and status = 'archived' returning id`,
  );
  return rows.length > 0;
}

async function memoryItem(tx: Tx, id: string): Promise<MemoryItem | null> {
  const [row] = await sqlRows<ItemRow>(
    tx,
    sql`
    select ${ITEM_COLUMNS}
    from entities e left join sources s on s.id = e.source_id
    where e.id = ${id}::uuid`,
  );
  return row ? toItem(row) : null;
}

function toItem(row: ItemRow): MemoryItem {
  return {
    id: row.id,
    type: row.type,
    name: row.name,
    properties: row.properties,
    status: row.status,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    toldAt: iso(row.told_at),
    happenedAt: isoOrNull(row.happened_at),
    source:
      row.source_kind && row.source_external_id
        ? {
            kind: row.source_kind,
            externalId: row.source_external_id,
            excerpt: row.source_text,
            at: iso(row.source_at ?? row.created_at),
            ...(row.source_kind === "mcp" && row.source_app ? { app: row.source_app } : {}),
            ...(IMPORTED_KINDS.has(row.source_kind) && row.source_title ? { title: row.source_title } : {}),
          }
        : null,
  };
}

// A cursor is the last row's created_at (microseconds, UTC, as Postgres prints it) and id, base64url.
function encodeCursor(at: string, id: string): string {
  return btoa(`${at}|${id}`).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function decodeCursor(cursor: string): { at: string; id: string } {
  let text: string;
  try {
    text = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
  } catch {
    throw new InvalidCursorError();
  }
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z)\|([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/.exec(
    text,
  );
  if (!match || Number.isNaN(Date.parse(match[1]!))) throw new InvalidCursorError();
  return { at: match[1]!, id: match[2]! };
}
