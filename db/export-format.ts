// The export file, version 1: one JSON document holding everything Soma keeps of a person — sources,
// entities, facts with their history, relations, events and reminders, and the conversation — each row
// with its dates and its own id. References between rows use those ids; an import into another account
// gives the rows new ids and rewrites the references (db/repositories/export.ts).
//
// This zod schema is the format's one definition: `GET /api/export` writes it, `POST /api/import` reads
// it, and docs/export/soma-export-v1.schema.json is generated from it (`npx tsx ops/export-schema.ts`;
// a test checks the committed file is current). A change a version-1 reader could not read is version 2.
//
// A file is read whole, so every part of it is bounded (issue 19): the free-form objects (`properties`,
// `payload`) by FREE_FORM_LIMITS, the lists by their counts; an import reads a conversation through
// ImportedConversation, which keeps only what the agent stores of it.
import { z } from "zod";
import { nameKeyFits } from "./repositories/memory";

export const EXPORT_FORMAT = "soma-export";
export const EXPORT_VERSION = 1;

const id = z.uuid();
const at = z.iso.datetime({ offset: true });
/** A short label: an entity or relation type, a source or event kind, a status, a category. */
const label = z.string().min(1).max(100);

/**
 * The bounds of a free-form object of the file (an entity's or relation's `properties`, a source's or
 * event's `payload`): far above what Soma writes there (a few details, a message's words, an email's
 * sender and subject, the aliases merges collect), and too small for a row to carry a bomb.
 */
export const FREE_FORM_LIMITS = { depth: 5, keys: 100, items: 1_000, chars: 20_000 } as const;

/** The conversation's messages a file holds at most: twice what an agent keeps (UserAgent.maxPersistedMessages). */
export const MAX_CONVERSATION_MESSAGES = 1_000;

/** The longest text part of an imported message (a message an agent stores is one SQLite row). */
const MAX_IMPORTED_TEXT = 100_000;

const shown = (n: number) => n.toLocaleString("en-US");

/** Where a free-form value first exceeds FREE_FORM_LIMITS (the value itself is one level deep), and how. */
function freeFormProblem(
  value: unknown,
  path: Array<string | number> = [],
  depth = 1,
): { path: Array<string | number>; message: string } | null {
  const limits = FREE_FORM_LIMITS;
  if (typeof value === "string")
    return value.length > limits.chars ? { path, message: `longer than ${shown(limits.chars)} characters` } : null;
  if (value === null || typeof value !== "object") return null;
  if (depth > limits.depth) return { path, message: `nests more than ${limits.depth} levels deep` };
  if (Array.isArray(value)) {
    if (value.length > limits.items) return { path, message: `more than ${shown(limits.items)} items` };
    for (const [i, item] of value.entries()) {
      const problem = freeFormProblem(item, [...path, i], depth + 1);
      if (problem) return problem;
    }
    return null;
  }
  const entries = Object.entries(value);
  if (entries.length > limits.keys) return { path, message: `more than ${shown(limits.keys)} keys` };
  for (const [key, item] of entries) {
    if (key.length > limits.chars) return { path, message: `a key longer than ${shown(limits.chars)} characters` };
    const problem = freeFormProblem(item, [...path, key], depth + 1);
    if (problem) return problem;
  }
  return null;
}

const object = z
  .record(z.string(), z.unknown())
  .superRefine((value, ctx) => {
    const problem = freeFormProblem(value);
    if (problem) ctx.addIssue({ code: "custom", path: problem.path, message: problem.message });
  })
  .meta({
    description: `A JSON object of at most ${FREE_FORM_LIMITS.keys} keys an object and ${shown(FREE_FORM_LIMITS.items)} items an array, ${FREE_FORM_LIMITS.depth} levels deep (the object itself is one), strings of at most ${shown(FREE_FORM_LIMITS.chars)} characters.`,
  });

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
  entityIds: z.array(id).max(FREE_FORM_LIMITS.items),
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

export const ExportedConversation = z.array(ExportedMessage).max(MAX_CONVERSATION_MESSAGES);

/**
 * A part of a message as an import reads it: its type, and a text part's words. The rest (tool calls and
 * their results, reasoning, files) is dropped here, as the import leaves it out (agents/conversation-transfer.ts).
 */
const ImportedPart = z.looseObject({ type: z.string().max(100) }).transform((part, ctx): { type: string; text?: string } => {
  if (part.type !== "text" || typeof part.text !== "string") return { type: part.type };
  if (part.text.length > MAX_IMPORTED_TEXT) {
    ctx.addIssue({ code: "custom", path: ["text"], message: `longer than ${shown(MAX_IMPORTED_TEXT)} characters` });
    return z.NEVER;
  }
  return { type: part.type, text: part.text };
});

/** A message as an import reads it: without its metadata (the import writes its own), so that none of it
 * is sent into the agent. */
const ImportedMessage = ExportedMessage.omit({ metadata: true, parts: true }).extend({ parts: z.array(ImportedPart) });

/** The conversation of a file, as an import reads it and UserAgent.importConversation receives it. */
export const ImportedConversation = z.array(ImportedMessage).max(MAX_CONVERSATION_MESSAGES);

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

/** Every reference of a file checked against the rows the file itself holds. */
function checkReferences(file: Omit<z.output<typeof document>, "conversation">, ctx: z.RefinementCtx): void {
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
}

/** A version-1 export, with every reference checked against the rows the file itself holds. */
export const SomaExport = document.superRefine(checkReferences);

/** A version-1 export as an import reads it: the conversation as ImportedConversation. */
export const SomaImport = document.extend({ conversation: ImportedConversation }).superRefine(checkReferences);

export type SomaExportV1 = z.infer<typeof document>;
export type ExportMessage = z.infer<typeof ExportedMessage>;
export type ImportMessage = z.output<typeof ImportedMessage>;

/** What a reader checks first: which format and version a file claims to be. */
export const ExportEnvelope = z.looseObject({ format: z.literal(EXPORT_FORMAT), version: z.number().int() });

/** The JSON Schema of version 1 (docs/export/soma-export-v1.schema.json is this, committed). */
export function exportJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(document, { target: "draft-2020-12", io: "input" }) as Record<string, unknown>;
}
