// What the export and import suites share: a person's memory of every kind, POST /api/import as the
// web app sends it, and the person's row counts.
import { sql } from "drizzle-orm";
import type { Person } from "../../db/repositories/auth";
import { recordFact } from "../../db/repositories/facts";
import { archiveEntity, captureEntity, recordSource, relateEntities } from "../../db/repositories/memory";
import { createReminder } from "../../db/repositories/reminders";
import type { SomaExportV1 } from "../../db/export-format";
import { events } from "../../db/schema";
import { call, testDatabase } from "./helpers";

/**
 * Some of every kind of row, labelled to tell people apart: three entities (one archived), a relation,
 * a fact and the one it superseded, a reminder, an email event.
 */
export async function seedMemory(person: Person, label: string) {
  const userId = person.id;
  await testDatabase().withUser(userId, async (tx) => {
    const sourceId = await recordSource(tx, userId, {
      kind: "test",
      externalId: `${label}-message-1`,
      payload: { text: `${label} told me things` },
    });
    const book = await captureEntity(tx, userId, {
      type: "book",
      name: `${label} Dune`,
      properties: { rating: 5 },
      embedding: null,
      sourceId,
      happenedAt: new Date("2024-02-03T11:00:00Z"),
    });
    const author = await captureEntity(tx, userId, { type: "person", name: `${label} Herbert`, embedding: null, sourceId });
    const place = await captureEntity(tx, userId, { type: "place", name: `${label} Lisbon`, embedding: null, sourceId: null });
    await archiveEntity(tx, place.entityId);
    await relateEntities(tx, userId, { fromId: book.entityId, toId: author.entityId, type: "written_by", sourceId });
    const fact = { category: "home", subject: "home city", confidence: 0.8, embedding: null, sourceId };
    await recordFact(tx, userId, { ...fact, statement: `${label} lives in Berlin` });
    await recordFact(tx, userId, { ...fact, statement: `${label} lives in Munich` });
    await createReminder(tx, userId, { text: `${label} call mum`, at: new Date(Date.now() + 86_400_000), sourceId });
    await tx.insert(events).values({
      userId,
      kind: "email",
      occurredAt: new Date("2024-05-01T10:00:00Z"),
      payload: { subject: `${label} hello` },
      entityIds: [book.entityId],
      sourceId,
    });
  });
}

/** POST /api/import as the web app sends it (same origin, JSON); `headers` override, `query` e.g. "?dryRun=1". */
export function importAs(cookie: string, body: string, headers: Record<string, string> = {}, query = ""): Promise<Response> {
  return call(`/api/import${query}`, {
    method: "POST",
    headers: { cookie, origin: "https://soma.test", "content-type": "application/json", ...headers },
    body,
  });
}

/** How many sources, entities, facts, edges and events the person has. */
export async function rowCounts(userId: string) {
  const [counts] = (await testDatabase().withUser(userId, (tx) =>
    tx.execute(sql`select (select count(*) from sources)::int as sources, (select count(*) from entities)::int as entities,
                          (select count(*) from facts)::int as facts, (select count(*) from edges)::int as edges,
                          (select count(*) from events)::int as events`),
  )) as unknown as Array<Record<string, number>>;
  return counts;
}

/** A version-1 export file holding `rows` and nothing else. */
export function exportFileOf(rows: Partial<SomaExportV1> = {}, exportedAt = "2024-05-01T10:00:00.000Z"): SomaExportV1 {
  return {
    format: "soma-export",
    version: 1,
    exportedAt,
    person: { displayName: "Imported", timezone: "UTC" },
    sources: [],
    entities: [],
    facts: [],
    edges: [],
    events: [],
    conversation: [],
    ...rows,
  };
}

/** The memories of a file with its ids and account-specific fields replaced by what they point at. */
export function memories(file: SomaExportV1) {
  const source = new Map(file.sources.map((s) => [s.id, `${s.kind}/${s.externalId}`]));
  const entity = new Map(file.entities.map((e) => [e.id, `${e.type}/${e.name}`]));
  const fact = new Map(file.facts.map((f) => [f.id, f.statement]));
  const of = (map: Map<string, string>, id: string | null) => (id === null ? null : (map.get(id) ?? "dangling"));
  const sorted = <T>(rows: T[]) => rows.map((r) => JSON.stringify(r)).sort();
  return {
    sources: sorted(file.sources.map(({ id: _, ...s }) => s)),
    entities: sorted(file.entities.map(({ id: _, sourceId, ...e }) => ({ ...e, source: of(source, sourceId) }))),
    facts: sorted(
      file.facts.map(({ id: _, sourceId, supersededBy, ...f }) => ({
        ...f,
        source: of(source, sourceId),
        supersededBy: of(fact, supersededBy),
      })),
    ),
    edges: sorted(
      file.edges.map(({ id: _, sourceId, fromId, toId, ...e }) => ({
        ...e,
        from: of(entity, fromId),
        to: of(entity, toId),
        source: of(source, sourceId),
      })),
    ),
    events: sorted(
      file.events.map(({ id: _, sourceId, entityIds, ...e }) => ({
        ...e,
        entities: entityIds.map((id) => of(entity, id)),
        source: of(source, sourceId),
      })),
    ),
    conversation: file.conversation.map((m) => ({
      role: m.role,
      text: m.parts.map((p) => (p.type === "text" ? String(p.text) : "")).join(""),
      createdAt: m.createdAt,
    })),
  };
}
