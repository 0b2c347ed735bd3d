// Facts: durable claims about the person ("Lives in Berlin"), one live row per claim. A repeat of a
// claim (the same words, or another wording at cosine similarity ≥ 0.85) reinforces it — its
// confidence becomes a moving average — instead of adding a row; a different claim on the same
// subject supersedes the old row (superseded_by → the new one), which stays as history.
import { sql } from "drizzle-orm";
import { sqlRows, type Tx } from "../database";
import { iso, isoOrNull } from "../timestamps";
import { normalizeName } from "./memory";
import { type FactColumns, factFields } from "./recall-rows";

/** Cosine similarity from which two statements are the same claim. */
const FACT_DEDUPE_SIMILARITY = 0.85;
/** Weight of the newest observation in the confidence moving average. */
const CONFIDENCE_ALPHA = 0.3;

export interface FactClaim {
  statement: string;
  category: string;
  subject: string;
  confidence: number;
  embedding: number[] | null;
  sourceId: string | null;
  /** Since when it holds, where the person said so. */
  happenedAt?: Date | null;
  /** When the person said it, when that was not now (an imported conversation); a claim older than the fact it would replace becomes that fact's history instead. */
  toldAt?: Date;
}

export type FactOutcome = "created" | "reinforced" | "superseded" | "unchanged";

interface LiveFact {
  id: string;
  statement: string;
  subject: string;
  confidence: number;
  source_id: string | null;
  told_at: Date | string;
  similarity: number | null;
}

/** Records one claim; see the file comment for how it merges with what is already known. */
export async function recordFact(tx: Tx, userId: string, claim: FactClaim): Promise<{ factId: string; outcome: FactOutcome }> {
  const vector = claim.embedding ? `[${claim.embedding.join(",")}]` : null;
  const subject = normalizeName(claim.subject);
  // The live facts this claim could be: the same subject, or a near-identical statement.
  const candidates = await sqlRows<LiveFact>(
    tx,
    sql`
    select id, statement, subject, confidence, source_id, told_at,
           ${vector ? sql`1 - (embedding <=> ${vector}::vector)` : sql`null::float8`} as similarity
    from facts
    where user_id = ${userId} and superseded_by is null
      and ((${subject} <> '' and subject = ${subject})
           ${vector ? sql`or (embedding <=> ${vector}::vector) <= ${1 - FACT_DEDUPE_SIMILARITY}` : sql``})
    order by ${vector ? sql`embedding <=> ${vector}::vector` : sql`updated_at desc`}
    limit 5`,
  );

  const same = normalizeName(claim.statement);
  const sameSubject = (f: LiveFact) => subject !== "" && f.subject === subject;
  // On one subject only the same words are a repeat ("Lives in Munich" is close to "Lives in Berlin"
  // in meaning but changes it); across subjects a close paraphrase is.
  const repeat =
    candidates.find((f) => normalizeName(f.statement) === same) ??
    candidates.find((f) => !sameSubject(f) && (f.similarity ?? 0) >= FACT_DEDUPE_SIMILARITY);
  if (repeat) {
    // The same message seen again (a redelivered event) teaches nothing new.
    if (claim.sourceId && repeat.source_id === claim.sourceId) return { factId: repeat.id, outcome: "unchanged" };
    await tx.execute(sql`
      update facts set confidence = ${1 - CONFIDENCE_ALPHA}::real * confidence + ${CONFIDENCE_ALPHA}::real * ${claim.confidence}::real,
                       source_id = coalesce(${claim.sourceId}::uuid, source_id),
                       happened_at = coalesce(${claim.happenedAt?.toISOString() ?? null}::timestamptz, happened_at), updated_at = now()
      where id = ${repeat.id}`);
    return { factId: repeat.id, outcome: "reinforced" };
  }

  const [row] = await sqlRows<{ id: string }>(
    tx,
    sql`
    insert into facts (user_id, statement, category, subject, confidence, embedding, source_id, happened_at, told_at)
    values (${userId}, ${claim.statement.trim()}, ${claim.category}, ${subject}, ${claim.confidence}, ${vector}::vector, ${claim.sourceId},
            ${claim.happenedAt?.toISOString() ?? null}::timestamptz, coalesce(${claim.toldAt?.toISOString() ?? null}::timestamptz, now()))
    returning id`,
  );
  if (!row) throw new Error("recordFact inserted no row");
  const changed = candidates.find(sameSubject);
  if (!changed) return { factId: row.id, outcome: "created" };
  // Said before what Soma knows now (an older conversation imported later): it is the fact's history.
  if (claim.toldAt && claim.toldAt < new Date(changed.told_at)) {
    await tx.execute(sql`update facts set superseded_by = ${changed.id} where id = ${row.id}`);
    return { factId: row.id, outcome: "created" };
  }
  await tx.execute(sql`update facts set superseded_by = ${row.id}, updated_at = now() where id = ${changed.id}`);
  return { factId: row.id, outcome: "superseded" };
}

export interface FactView {
  id: string;
  statement: string;
  category: string;
  subject: string;
  confidence: number;
  /** 'extracted' from a message, or 'correction': the person corrected an earlier fact. */
  origin: string;
  /** The fact that replaced this one; null for a current fact. */
  supersededBy: string | null;
  toldAt: string;
  /** Since when it holds, where the person said so. */
  happenedAt: string | null;
  updatedAt: string;
  /** The message it was learnt from: why Soma believes it. */
  source: { kind: string; excerpt: string | null; at: string } | null;
}

type FactViewRow = FactColumns & {
  superseded_by: string | null;
  updated_at: string | Date;
  source_kind: string | null;
  source_text: string | null;
  source_at: string | Date | null;
};

const FACT_VIEW = sql`f.id, f.statement, f.category, f.subject, f.confidence, f.origin, f.superseded_by, f.told_at, f.happened_at, f.updated_at,
  s.kind as source_kind, s.payload ->> 'text' as source_text, s.created_at as source_at`;

function toView(row: FactViewRow): FactView {
  return {
    ...factFields(row),
    supersededBy: row.superseded_by,
    toldAt: iso(row.told_at),
    happenedAt: isoOrNull(row.happened_at),
    updatedAt: iso(row.updated_at),
    source: row.source_kind ? { kind: row.source_kind, excerpt: row.source_text, at: iso(row.source_at ?? row.told_at) } : null,
  };
}

/**
 * The person's facts with where each came from: the current ones (most confident, then most recently
 * confirmed, first), then — with `history` — the superseded ones, newest first.
 */
export async function listFacts(tx: Tx, options: { history: boolean; limit: number }): Promise<FactView[]> {
  const rows = await sqlRows<FactViewRow>(
    tx,
    sql`
    select ${FACT_VIEW} from facts f left join sources s on s.id = f.source_id
    ${options.history ? sql`` : sql`where f.superseded_by is null`}
    order by (f.superseded_by is null) desc,
             case when f.superseded_by is null then f.confidence end desc nulls last,
             f.updated_at desc, f.id
    limit ${options.limit}`,
  );
  return rows.map(toView);
}

export type Correction =
  | { outcome: "corrected"; fact: FactView; supersededId: string }
  | { outcome: "unchanged"; fact: FactView }
  | { outcome: "not_found" }
  | { outcome: "superseded"; currentId: string };

/**
 * The person corrects a current fact: a new fact (origin 'correction', confidence 1, same subject)
 * supersedes it, and the old one stays as history — the same shape fact-extract gives a changed claim,
 * so a later "I moved again" supersedes the correction in turn. Saying the same thing again changes
 * nothing. A superseded fact is history and is not corrected: the answer names the current one.
 */
export async function correctFact(
  tx: Tx,
  userId: string,
  factId: string,
  change: { statement?: string | undefined; category?: string | undefined; embedding: number[] | null; sourceId: string | null },
): Promise<Correction> {
  const [old] = await sqlRows<{
    id: string;
    statement: string;
    category: string;
    subject: string;
    superseded_by: string | null;
  }>(
    tx,
    sql`
    select id, statement, category, subject, superseded_by from facts where id = ${factId} for update`,
  );
  if (!old) return { outcome: "not_found" };
  if (old.superseded_by) {
    const currentId = await currentOf(tx, old.superseded_by);
    // The same correction again (a turn re-run after a crash, same message): it is already done.
    const current = change.sourceId ? await factView(tx, currentId) : null;
    const [mine] = current
      ? await sqlRows(tx, sql`select 1 from facts where id = ${currentId} and source_id = ${change.sourceId} and origin = 'correction'`)
      : [];
    if (current && mine) return { outcome: "corrected", fact: current, supersededId: old.id };
    return { outcome: "superseded", currentId };
  }
  const statement = change.statement?.trim() ?? old.statement;
  const category = change.category ?? old.category;
  if (normalizeName(statement) === normalizeName(old.statement) && category === old.category) {
    return { outcome: "unchanged", fact: (await factView(tx, old.id))! };
  }
  // A new text needs its own embedding; a category change keeps the old text's.
  const vector = change.statement !== undefined && change.embedding ? `[${change.embedding.join(",")}]` : null;
  const [row] = await sqlRows<{ id: string }>(
    tx,
    sql`
    insert into facts (user_id, statement, category, subject, confidence, embedding, source_id, origin, happened_at)
    select ${userId}, ${statement}, ${category}, subject, 1, ${change.statement !== undefined ? sql`${vector}::vector` : sql`embedding`},
           ${change.sourceId}, 'correction',
           -- since when the old claim held says nothing about a new one; a new category keeps it
           ${change.statement !== undefined ? sql`null::timestamptz` : sql`happened_at`}
    from facts where id = ${old.id}
    returning id`,
  );
  if (!row) throw new Error("correctFact inserted no row");
  await tx.execute(sql`update facts set superseded_by = ${row.id} where id = ${old.id}`);
  return { outcome: "corrected", fact: (await factView(tx, row.id))!, supersededId: old.id };
}

/** The end of a supersede chain: the current fact that `id` led to. */
async function currentOf(tx: Tx, id: string): Promise<string> {
  const [row] = await sqlRows<{ id: string }>(
    tx,
    sql`
    with recursive chain(id, next, depth) as (
      select id, superseded_by, 0 from facts where id = ${id}
      union all select f.id, f.superseded_by, c.depth + 1 from facts f join chain c on f.id = c.next where c.depth < 100
    )
    select id from chain order by depth desc limit 1`,
  );
  return row?.id ?? id;
}

async function factView(tx: Tx, id: string): Promise<FactView | null> {
  const [row] = await sqlRows<FactViewRow>(
    tx,
    sql`
    select ${FACT_VIEW} from facts f left join sources s on s.id = f.source_id where f.id = ${id}`,
  );
  return row ? toView(row) : null;
}

/**
 * Deletes a fact and the history behind it (the facts it superseded, and theirs): what the person
 * deletes is gone from every prompt, recall and list. False when there is no such fact (for this person).
 */
export async function deleteFact(tx: Tx, factId: string): Promise<boolean> {
  const rows = await sqlRows<{ id: string }>(
    tx,
    sql`
    with recursive behind(id, depth) as (
      select id, 0 from facts where id = ${factId}
      union all select f.id, b.depth + 1 from facts f join behind b on f.superseded_by = b.id where b.depth < 100
    )
    delete from facts where id in (select id from behind) returning id`,
  );
  return rows.length > 0;
}

/** The person's current facts, most confident and then most recently confirmed first. */
export async function currentFacts(
  tx: Tx,
  limit: number,
): Promise<Array<{ id: string; statement: string; category: string; confidence: number; happenedAt: Date | null }>> {
  const rows = await sqlRows<{
    id: string;
    statement: string;
    category: string;
    confidence: number | string;
    happened_at: string | Date | null;
  }>(
    tx,
    sql`
    select id, statement, category, confidence, happened_at from facts
    where superseded_by is null order by confidence desc, updated_at desc, id limit ${limit}`,
  );
  return rows.map(({ happened_at, ...r }) => ({
    ...r,
    confidence: Number(r.confidence),
    happenedAt: happened_at === null ? null : new Date(happened_at),
  }));
}

/** The statements of the person's facts among `ids` (unknown ids are left out). */
export async function factStatements(tx: Tx, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await sqlRows<{ statement: string }>(tx, sql`select statement from facts where id in ${ids}`);
  return rows.map((r) => r.statement);
}
