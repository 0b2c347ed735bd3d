// A person's memory as an export file (db/export-format.ts), and back. Both run in a transaction that
// Database.withUser opened: row-level security shows and accepts only that person's rows, so an export
// holds nothing of anyone else and an import writes nothing outside the account.
//
// Import is idempotent: a row already present is never added twice. Sources and entities are matched
// by their natural keys (kind + external id; type + normalized name), the other rows by id: a row
// keeps its exported id when this account already has it (a file re-imported where it came from) and
// otherwise gets an id derived from the account and the exported id (uuid v5), so importing the same
// file into another account twice lands on the same new ids. References are rewritten to the new ids.
// Rows go in with one statement per table (the rows travel as one jsonb parameter: a file may hold far
// more rows than a statement may have parameters). Embeddings are not part of the file: the import
// emits memory/imported, and memory-consolidate embeds the new memories (until then they are found by
// their words).
//
// What one file may do is bounded (issue 19): a file past one of IMPORT_CAPS (./import-caps.ts) is
// refused whole, before its rows are committed; and no recorded time lies after now (a row dated 2099
// would stay the newest forever): created, updated and told times after the import are stored as the
// import's time, while when something happened or falls due — a reminder's time — may be in the future.
import { asc, ne, sql, TransactionRollbackError } from "drizzle-orm";
import { sqlRows, type Tx } from "../database";
import { LONE_SURROGATE } from "../../platform/clean-text";
import { EXPORT_FORMAT, EXPORT_VERSION, type SomaExportV1 } from "../export-format";
import { edges, entities, events, facts, sources, users } from "../schema";
import { normalizeName } from "./memory";
import { checkAccountCaps, checkFileRows } from "./import-caps";
import { SHOWN_LIST } from "./reminders";
import { iso } from "../timestamps";

/** The rows of an export (the conversation lives in the agent, not in Postgres). */
export type MemoryExport = Omit<SomaExportV1, "conversation">;

export interface ImportOutcome {
  /** Rows this import added, per table (0 everywhere for a file imported before). */
  added: { sources: number; entities: number; facts: number; edges: number; events: number };
  /** Reminders it added that are still to come: the caller hands them to the delivery workflow. */
  reminders: Array<{ eventId: string; at: string }>;
}

/** Everything the person's rows hold, oldest first, each with its dates. */
export async function exportMemory(tx: Tx): Promise<MemoryExport> {
  const [person] = await tx.select({ displayName: users.displayName, timezone: users.timezone }).from(users);
  const sourceRows = await tx
    .select({ id: sources.id, kind: sources.kind, externalId: sources.externalId, payload: sources.payload, createdAt: sources.createdAt })
    .from(sources)
    // The numbered list /reminders showed last is the bot's working state, not something the person told.
    .where(ne(sources.kind, SHOWN_LIST.kind))
    .orderBy(asc(sources.createdAt), asc(sources.id));
  const entityRows = await tx
    .select({
      id: entities.id,
      type: entities.type,
      name: entities.name,
      properties: entities.properties,
      status: entities.status,
      sourceId: entities.sourceId,
      createdAt: entities.createdAt,
      updatedAt: entities.updatedAt,
      toldAt: entities.toldAt,
      happenedAt: entities.happenedAt,
    })
    .from(entities)
    .orderBy(asc(entities.createdAt), asc(entities.id));
  const factRows = await tx
    .select({
      id: facts.id,
      statement: facts.statement,
      category: facts.category,
      subject: facts.subject,
      confidence: facts.confidence,
      supersededBy: facts.supersededBy,
      sourceId: facts.sourceId,
      createdAt: facts.createdAt,
      updatedAt: facts.updatedAt,
      toldAt: facts.toldAt,
      happenedAt: facts.happenedAt,
      origin: facts.origin,
    })
    .from(facts)
    .orderBy(asc(facts.createdAt), asc(facts.id));
  const edgeRows = await tx
    .select({
      id: edges.id,
      fromId: edges.fromId,
      toId: edges.toId,
      type: edges.type,
      properties: edges.properties,
      validFrom: edges.validFrom,
      validTo: edges.validTo,
      sourceId: edges.sourceId,
      createdAt: edges.createdAt,
    })
    .from(edges)
    .orderBy(asc(edges.createdAt), asc(edges.id));
  const eventRows = await tx
    .select({
      id: events.id,
      kind: events.kind,
      occurredAt: events.occurredAt,
      payload: events.payload,
      entityIds: events.entityIds,
      status: events.status,
      sourceId: events.sourceId,
      createdAt: events.createdAt,
      toldAt: events.toldAt,
    })
    .from(events)
    // The brief's and the review's times are settings of this Soma, not memory (agents/schedules/routines.ts).
    .where(ne(events.kind, "routine"))
    .orderBy(asc(events.createdAt), asc(events.id));
  const knownFacts = new Set(factRows.map((f) => f.id));
  return {
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    exportedAt: new Date().toISOString(),
    person: { displayName: person?.displayName ?? "", timezone: person?.timezone ?? "UTC" },
    sources: sourceRows.map((s) => ({ ...s, createdAt: iso(s.createdAt) })),
    entities: entityRows.map((e) => ({
      ...e,
      createdAt: iso(e.createdAt),
      updatedAt: iso(e.updatedAt),
      toldAt: iso(e.toldAt),
      happenedAt: e.happenedAt && iso(e.happenedAt),
    })),
    // superseded_by has no foreign key: a dangling one (never written by Soma) is left out rather than
    // making the file unreadable.
    facts: factRows.map((f) => ({
      ...f,
      supersededBy: f.supersededBy && knownFacts.has(f.supersededBy) ? f.supersededBy : null,
      createdAt: iso(f.createdAt),
      updatedAt: iso(f.updatedAt),
      toldAt: iso(f.toldAt),
      happenedAt: f.happenedAt && iso(f.happenedAt),
    })),
    edges: edgeRows.map((e) => ({ ...e, validFrom: iso(e.validFrom), validTo: e.validTo && iso(e.validTo), createdAt: iso(e.createdAt) })),
    events: eventRows.map((e) => ({ ...e, occurredAt: iso(e.occurredAt), createdAt: iso(e.createdAt), toldAt: iso(e.toldAt) })),
  };
}

/** Loads an export file's rows into the person's memory (see the file comment); returns what it added. */
export async function importMemory(tx: Tx, userId: string, input: MemoryExport, now = new Date()): Promise<ImportOutcome> {
  checkFileRows(input);
  const file = storable(input);
  const recorded = notAfter(now);
  const sourceIds = await importSources(tx, userId, file.sources, recorded);
  const source = (id: string | null) => (id === null ? null : (sourceIds.map.get(id) ?? null));
  const entityIds = await importEntities(tx, userId, file.entities, source, recorded);
  const entity = (id: string) => entityIds.map.get(id);

  const factIds = await keepOrDerive(
    tx,
    userId,
    "facts",
    file.facts.map((f) => f.id),
  );
  const addedFacts = await insertRows(
    tx,
    "facts",
    userId,
    file.facts.map((f) => ({
      id: factIds.get(f.id),
      statement: f.statement,
      category: f.category,
      subject: f.subject,
      confidence: f.confidence,
      superseded_by: f.supersededBy && (factIds.get(f.supersededBy) ?? null),
      source_id: source(f.sourceId),
      created_at: recorded(f.createdAt),
      updated_at: recorded(f.updatedAt),
      told_at: recorded(f.toldAt ?? f.createdAt),
      happened_at: f.happenedAt ?? null,
      origin: f.origin ?? "extracted",
    })),
    sql`id uuid, statement text, category text, subject text, confidence real, superseded_by uuid, source_id uuid, created_at timestamptz, updated_at timestamptz, told_at timestamptz, happened_at timestamptz, origin text`,
  );

  const edgeIds = await keepOrDerive(
    tx,
    userId,
    "edges",
    file.edges.map((e) => e.id),
  );
  const addedEdges = await insertRows(
    tx,
    "edges",
    userId,
    file.edges.map((e) => ({
      id: edgeIds.get(e.id),
      from_id: entity(e.fromId),
      to_id: entity(e.toId),
      type: e.type,
      properties: e.properties,
      valid_from: e.validFrom,
      valid_to: e.validTo,
      source_id: source(e.sourceId),
      created_at: recorded(e.createdAt),
    })),
    sql`id uuid, from_id uuid, to_id uuid, type text, properties jsonb, valid_from timestamptz, valid_to timestamptz, source_id uuid, created_at timestamptz`,
  );

  // A file's brief or review settings ('routine' rows) are not taken: only the person sets their own.
  const fileEvents = file.events.filter((e) => e.kind !== "routine");
  const eventIds = await keepOrDerive(
    tx,
    userId,
    "events",
    fileEvents.map((e) => e.id),
  );
  const addedEvents = await insertRows(
    tx,
    "events",
    userId,
    fileEvents.map((e) => ({
      id: eventIds.get(e.id),
      kind: e.kind,
      occurred_at: e.occurredAt,
      payload: e.payload,
      entity_ids: e.entityIds.map(entity).filter((id) => id !== undefined),
      status: e.status,
      source_id: source(e.sourceId),
      created_at: recorded(e.createdAt),
      told_at: recorded(e.toldAt ?? e.createdAt),
    })),
    sql`id uuid, kind text, occurred_at timestamptz, payload jsonb, entity_ids uuid[], status text, source_id uuid, created_at timestamptz, told_at timestamptz`,
  );
  const added = new Set(addedEvents);
  // A reminder whose time passed before the import stays as it was exported and is not sent now.
  const reminders = fileEvents
    .filter((e) => e.kind === "reminder" && e.status === "scheduled" && new Date(e.occurredAt) > now && added.has(eventIds.get(e.id)!))
    .map((e) => ({ eventId: eventIds.get(e.id)!, at: new Date(e.occurredAt).toISOString() }));
  await checkAccountCaps(tx, userId, { memories: entityIds.added + addedFacts.length, futureReminders: reminders.length }, now);

  return {
    added: {
      sources: sourceIds.added,
      entities: entityIds.added,
      facts: addedFacts.length,
      edges: addedEdges.length,
      events: addedEvents.length,
    },
    reminders,
  };
}

/** The import's dry run: what importMemory would add, from the same statements, rolled back to a savepoint. */
export async function previewImport(tx: Tx, userId: string, input: MemoryExport, now = new Date()): Promise<ImportOutcome["added"]> {
  let added: ImportOutcome["added"] | undefined;
  try {
    await tx.transaction(async (savepoint) => {
      added = (await importMemory(savepoint, userId, input, now)).added;
      savepoint.rollback();
    });
  } catch (error) {
    if (!(error instanceof TransactionRollbackError)) throw error;
  }
  if (!added) throw new Error("previewImport ended without counts");
  return added;
}

/** A recorded time (created, updated, told) as an import stores it: never after `now`. */
type Recorded = (at: string) => string;

function notAfter(now: Date): Recorded {
  const latest = now.toISOString();
  return (at) => (Date.parse(at) > now.getTime() ? latest : at);
}

type IdMap = { map: Map<string, string>; added: number };

/** Sources by (kind, external id): one already recorded is the same source. */
async function importSources(tx: Tx, userId: string, rows: MemoryExport["sources"], recorded: Recorded): Promise<IdMap> {
  if (rows.length === 0) return { map: new Map(), added: 0 };
  const json = JSON.stringify(
    rows.map((s) => ({ kind: s.kind, external_id: s.externalId, payload: s.payload, created_at: recorded(s.createdAt) })),
  );
  const inserted = await sqlRows<{ id: string }>(
    tx,
    sql`
    insert into sources (user_id, kind, external_id, payload, created_at)
    select ${userId}::uuid, kind, external_id, payload, created_at
    from jsonb_to_recordset(${json}::jsonb) as x(kind text, external_id text, payload jsonb, created_at timestamptz)
    on conflict (user_id, kind, external_id) do nothing
    returning id`,
  );
  const found = await sqlRows<{ id: string; kind: string; external_id: string }>(
    tx,
    sql`
    select s.id, s.kind, s.external_id from sources s
    join jsonb_to_recordset(${json}::jsonb) as x(kind text, external_id text) on s.kind = x.kind and s.external_id = x.external_id
    where s.user_id = ${userId}`,
  );
  const byKey = new Map(found.map((s) => [JSON.stringify([s.kind, s.external_id]), s.id]));
  return { map: mapBy(rows, (s) => byKey.get(JSON.stringify([s.kind, s.externalId]))), added: inserted.length };
}

/**
 * Entities by (type, normalized name), like every capture: one already known is the same entity. It
 * keeps its own name, status and values and gains only the properties it did not have (an unchanged
 * row is not written, so its updated_at stays).
 */
async function importEntities(
  tx: Tx,
  userId: string,
  rows: MemoryExport["entities"],
  source: (id: string | null) => string | null,
  recorded: Recorded,
): Promise<IdMap> {
  if (rows.length === 0) return { map: new Map(), added: 0 };
  const json = JSON.stringify(
    rows.map((e) => ({
      type: e.type,
      name: e.name.trim(),
      normalized_name: normalizeName(e.name),
      properties: e.properties,
      status: e.status,
      source_id: source(e.sourceId),
      created_at: recorded(e.createdAt),
      updated_at: recorded(e.updatedAt),
      told_at: recorded(e.toldAt ?? e.createdAt),
      happened_at: e.happenedAt ?? null,
    })),
  );
  const written = await sqlRows<{ created: boolean }>(
    tx,
    sql`
    insert into entities (user_id, type, name, normalized_name, properties, status, source_id, created_at, updated_at, told_at, happened_at)
    select distinct on (type, normalized_name) ${userId}::uuid, type, name, normalized_name, properties, status, source_id, created_at, updated_at, told_at, happened_at
    from jsonb_to_recordset(${json}::jsonb) as x(type text, name text, normalized_name text, properties jsonb, status text, source_id uuid, created_at timestamptz, updated_at timestamptz, told_at timestamptz, happened_at timestamptz)
    order by type, normalized_name, created_at
    on conflict (user_id, type, normalized_name) do update set properties = excluded.properties || entities.properties
      where (excluded.properties || entities.properties) is distinct from entities.properties
    returning (xmax = 0) as created`,
  );
  const found = await sqlRows<{ id: string; type: string; normalized_name: string }>(
    tx,
    sql`
    select e.id, e.type, e.normalized_name from entities e
    join jsonb_to_recordset(${json}::jsonb) as x(type text, normalized_name text) on e.type = x.type and e.normalized_name = x.normalized_name
    where e.user_id = ${userId}`,
  );
  const byKey = new Map(found.map((e) => [JSON.stringify([e.type, e.normalized_name]), e.id]));
  return {
    map: mapBy(rows, (e) => byKey.get(JSON.stringify([e.type, normalizeName(e.name)]))),
    added: written.filter((r) => r.created).length,
  };
}

/** New ids for rows keyed by id: the exported id when this account has that row, else one derived from the account and it. */
async function keepOrDerive(tx: Tx, userId: string, table: "facts" | "edges" | "events", ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await sqlRows<{ old_id: string; new_id: string }>(
    tx,
    sql`
    select x.id as old_id, coalesce(t.id, uuid_generate_v5(${userId}::uuid, ${table} || '/' || x.id)) as new_id
    from jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb) as x(id)
    left join ${sql.raw(table)} t on t.id = x.id::uuid`,
  );
  return new Map(rows.map((r) => [r.old_id, r.new_id]));
}

/** Inserts rows whose ids are settled, skipping ids already present; the ids it added. */
async function insertRows(
  tx: Tx,
  table: "facts" | "edges" | "events",
  userId: string,
  rows: Array<Record<string, unknown>>,
  columns: ReturnType<typeof sql>,
): Promise<string[]> {
  if (rows.length === 0) return [];
  const names = Object.keys(rows[0]!);
  const list = sql.raw(names.join(", "));
  const inserted = await sqlRows<{ id: string }>(
    tx,
    sql`
    insert into ${sql.raw(table)} (user_id, ${list})
    select ${userId}::uuid, ${list} from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as x(${columns})
    on conflict (id) do nothing
    returning id`,
  );
  return inserted.map((r) => r.id);
}

function mapBy<T extends { id: string }>(rows: T[], newId: (row: T) => string | undefined): Map<string, string> {
  const map = new Map<string, string>();
  for (const row of rows) {
    const id = newId(row);
    if (id) map.set(row.id, id);
  }
  return map;
}

/**
 * The file with NUL and lone surrogates taken out of every string, keys too (Postgres text and jsonb
 * refuse both). In place: the parsed file is the import's own, and a copy of a file of thousands of
 * rows would double what an import holds in memory. Only a key that changes is replaced.
 */
function storable<T>(value: T): T {
  if (typeof value === "string") return storableText(value) as T;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) value[i] = storable(item);
  } else if (value && typeof value === "object") {
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const clean = storableText(key);
      const item = storable(record[key]);
      if (clean !== key) delete record[key];
      record[clean] = item;
    }
  }
  return value;
}

function storableText(text: string): string {
  return text.replaceAll("\u0000", "").replace(LONE_SURROGATE, "");
}
