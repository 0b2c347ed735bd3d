// What recall answers (db/repositories/recall.ts): a remembered entity or fact with its score, the
// retrievers that found it and its source, made from the rows of recall's statements.
import { iso, isoOrNull } from "../timestamps";

type MatchKind = "vector" | "fulltext" | "trigram" | "type" | "time";

type Source = { kind: string; externalId: string; excerpt: string | null; at: string } | null;

export interface RecalledEntity {
  kind: "entity";
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
  source: Source;
  /** When the person told it (the source message's time). */
  toldAt: string;
  /** When it happened, where the person said so. */
  happenedAt: string | null;
}

export interface RecalledFact {
  kind: "fact";
  fact: { id: string; statement: string; category: string; subject: string; confidence: number; origin: string };
  score: number;
  matchedBy: MatchKind[];
  source: Source;
  toldAt: string;
  /** Since when it holds, where the person said so. */
  happenedAt: string | null;
}

export type RecallResult = RecalledEntity | RecalledFact;

type SourceColumns = {
  source_kind: string | null;
  source_external_id: string | null;
  source_text: string | null;
  source_at: string | Date | null;
};

export type RecallRow = SourceColumns & {
  id: string;
  type: string;
  name: string;
  properties: Record<string, unknown>;
  created_at: string | Date;
  updated_at: string | Date;
  told_at: string | Date;
  happened_at: string | Date | null;
  score: string | number;
  matched_by: MatchKind[] | string;
};

/** A fact's own columns as a statement returns them (recall's rows add a score; the facts page, its history: facts.ts). */
export type FactColumns = {
  id: string;
  statement: string;
  category: string;
  subject: string;
  confidence: number | string;
  origin: string;
  told_at: string | Date;
  happened_at: string | Date | null;
};

export type FactRow = SourceColumns &
  FactColumns & {
    score: string | number;
    matched_by: MatchKind[] | string;
  };

export function toRecalled(row: RecallRow): RecalledEntity {
  return {
    kind: "entity",
    entity: {
      id: row.id,
      type: row.type,
      name: row.name,
      properties: row.properties,
      createdAt: iso(row.created_at),
      updatedAt: iso(row.updated_at),
    },
    score: Number(Number(row.score).toFixed(5)),
    matchedBy: matchKinds(row.matched_by),
    source: sourceOf(row, row.created_at),
    toldAt: iso(row.told_at),
    happenedAt: isoOrNull(row.happened_at),
  };
}

function sourceOf(row: SourceColumns, fallbackAt: string | Date): Source {
  return row.source_kind && row.source_external_id
    ? { kind: row.source_kind, externalId: row.source_external_id, excerpt: row.source_text, at: iso(row.source_at ?? fallbackAt) }
    : null;
}

function matchKinds(value: MatchKind[] | string): MatchKind[] {
  // Postgres text[] output ("{a,b}") when the driver has not parsed it.
  const kinds = Array.isArray(value)
    ? value
    : value
        .replace(/^\{|\}$/g, "")
        .split(",")
        .filter(Boolean);
  return (kinds as MatchKind[]).sort();
}

/** A fact's own fields from its columns (recall's answers and the facts page alike). */
export function factFields(row: FactColumns) {
  return {
    id: row.id,
    statement: row.statement,
    category: row.category,
    subject: row.subject,
    confidence: Number(Number(row.confidence).toFixed(3)),
    origin: row.origin,
  };
}

export function toRecalledFact(row: FactRow): RecalledFact {
  return {
    kind: "fact",
    fact: factFields(row),
    score: Number(Number(row.score).toFixed(5)),
    matchedBy: matchKinds(row.matched_by),
    source: sourceOf(row, row.told_at),
    toldAt: iso(row.told_at),
    happenedAt: isoOrNull(row.happened_at),
  };
}
