// The export file, version 1: one JSON document holding everything Soma keeps of a person — sources,
// entities, facts with their history, relations, events and reminders, and the conversation — each row
// with its dates and its own id. References between rows use those ids; an import into another account
// gives the rows new ids and rewrites the references (db/repositories/export.ts).
//
// This zod schema is the format's one definition: `GET /api/export` writes it, `POST /api/import` reads
// it, and docs/export/soma-export-v1.schema.json is generated from it (`npx tsx ops/export-schema.ts`;
// a test checks the committed file is current). A change a version-1 reader could not read is version 2.
import { z } from "zod";
import { nameKeyFits } from "./repositories/memory";

export const EXPORT_FORMAT = "soma-export";
export const EXPORT_VERSION = 1;

const id = z.uuid();
const at = z.iso.datetime({ offset: true });
/** A short label: an entity or relation type, a source or event kind, a status, a category. */
const label = z.string().min(1).max(100);
const object = z.record(z.string(), z.unknown());

const ExportedSource = z.object({
  id,
  kind: label,
  externalId: z.string().min(1).max(1000),
  payload: object,
  createdAt: at,
});

const ExportedEntity = z.object({
  id,
  type: label,
  name: z.string().min(1).max(1000).refine(nameKeyFits, "name is too long to store"),
  properties: object,
  status: z.enum(["active", "archived"]),
  sourceId: id.nullable(),
  createdAt: at,
  updatedAt: at,
  /** When the person told it (files before this field: createdAt). */
  toldAt: at.optional(),
  /** When it happened, where the person said so. */
  happenedAt: at.nullable().optional(),
});

const ExportedFact = z.object({
  id,
  statement: z.string().min(1).max(5000),
  category: label,
  subject: z.string().max(500),
  confidence: z.number().min(0).max(1),
  /** The fact that replaced this one (history), or null while it holds. */
  supersededBy: id.nullable(),
  sourceId: id.nullable(),
  createdAt: at,
  updatedAt: at,
  /** When the person told it (files before this field: createdAt). */
  toldAt: at.optional(),
  /** "extracted" from what the person said, or the person's own "correction". */
  origin: z.enum(["extracted", "correction"]).optional(),
  /** Since when it holds, where the person said so. */
  happenedAt: at.nullable().optional(),
});

const ExportedEdge = z.object({
  id,
  fromId: id,
  toId: id,
  type: label,
  properties: object,
  validFrom: at,
  validTo: at.nullable(),
  sourceId: id.nullable(),
  createdAt: at,
});

const ExportedEvent = z.object({
  id,
  kind: label,
  occurredAt: at,
  payload: object,
  entityIds: z.array(id),
  status: label,
  sourceId: id.nullable(),
  createdAt: at,
  /** When the person told it (files before this field: createdAt). */
  toldAt: at.optional(),
});

/** One message of the conversation, as the agent stores it (an AI SDK UI message) with its date. */
const ExportedMessage = z.object({
  id: z.string().min(1).max(200),
  role: z.enum(["system", "user", "assistant"]),
  parts: z.array(z.looseObject({ type: z.string() })),
  metadata: z.unknown().optional(),
  createdAt: at.nullable(),
});

export const ExportedConversation = z.array(ExportedMessage);

const document = z
  .object({
    format: z.literal(EXPORT_FORMAT),
    version: z.literal(EXPORT_VERSION),
    exportedAt: at,
    /** Who the export is of; informational (an import never changes the account's name or time zone). */
    person: z.object({ displayName: z.string().max(200), timezone: z.string().max(100) }),
    sources: z.array(ExportedSource),
    entities: z.array(ExportedEntity),
    facts: z.array(ExportedFact),
    edges: z.array(ExportedEdge),
    events: z.array(ExportedEvent),
    conversation: ExportedConversation,
  })
  .meta({ title: "Soma export, version 1", description: "Everything Soma keeps of one person (docs/export.md)." });

/** A version-1 export, with every reference checked against the rows the file itself holds. */
export const SomaExport = document.superRefine((file, ctx) => {
  const ids = (rows: Array<{ id: string }>) => new Set(rows.map((r) => r.id));
  const sources = ids(file.sources);
  const entities = ids(file.entities);
  const facts = ids(file.facts);
  const check = (known: Set<string>, value: string | null, path: Array<string | number>, what: string) => {
    if (value !== null && !known.has(value)) ctx.addIssue({ code: "custom", path, message: `no ${what} with this id in the file` });
  };
  for (const table of ["entities", "facts", "edges", "events"] as const) {
    for (const [i, row] of file[table].entries()) check(sources, row.sourceId, [table, i, "sourceId"], "source");
  }
  for (const [i, fact] of file.facts.entries()) check(facts, fact.supersededBy, ["facts", i, "supersededBy"], "fact");
  for (const [i, edge] of file.edges.entries()) {
    check(entities, edge.fromId, ["edges", i, "fromId"], "entity");
    check(entities, edge.toId, ["edges", i, "toId"], "entity");
  }
  for (const [i, event] of file.events.entries()) {
    for (const [j, entity] of event.entityIds.entries()) check(entities, entity, ["events", i, "entityIds", j], "entity");
  }
});

export type SomaExportV1 = z.infer<typeof document>;
export type ExportMessage = z.infer<typeof ExportedMessage>;

/** What a reader checks first: which format and version a file claims to be. */
export const ExportEnvelope = z.looseObject({ format: z.literal(EXPORT_FORMAT), version: z.number().int() });

/** The JSON Schema of version 1 (docs/export/soma-export-v1.schema.json is this, committed). */
export function exportJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(document, { target: "draft-2020-12", io: "input" }) as Record<string, unknown>;
}
