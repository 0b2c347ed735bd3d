// Facts: durable claims about the person ("Lives in Berlin"), one live row per claim. A repeat of a
// claim (the same words, or another wording at cosine similarity ≥ 0.85) reinforces it — its
// confidence becomes a moving average — instead of adding a row; a different claim on the same
// subject supersedes the old row (superseded_by → the new one), which stays as history.
import { sql } from "drizzle-orm";
import type { Tx } from "../database";
import { normalizeName } from "./memory";

/** Cosine similarity from which two statements are the same claim. */
export const FACT_DEDUPE_SIMILARITY = 0.85;
/** Weight of the newest observation in the confidence moving average. */
const CONFIDENCE_ALPHA = 0.3;

export interface FactClaim {
  statement: string;
  category: string;
  subject: string;
  confidence: number;
  embedding: number[] | null;
  sourceId: string | null;
}

export type FactOutcome = "created" | "reinforced" | "superseded" | "unchanged";

interface LiveFact {
  id: string;
  statement: string;
  subject: string;
  confidence: number;
  source_id: string | null;
  similarity: number | null;
  [key: string]: unknown;
}

/** Records one claim; see the file comment for how it merges with what is already known. */
export async function recordFact(tx: Tx, userId: string, claim: FactClaim): Promise<{ factId: string; outcome: FactOutcome }> {
  const vector = claim.embedding ? `[${claim.embedding.join(",")}]` : null;
  const subject = normalizeName(claim.subject);
  // The live facts this claim could be: the same subject, or a near-identical statement.
  const candidates = (await tx.execute(sql`
    select id, statement, subject, confidence, source_id,
           ${vector ? sql`1 - (embedding <=> ${vector}::vector)` : sql`null::float8`} as similarity
    from facts
    where user_id = ${userId} and superseded_by is null
      and ((${subject} <> '' and subject = ${subject})
           ${vector ? sql`or (embedding <=> ${vector}::vector) <= ${1 - FACT_DEDUPE_SIMILARITY}` : sql``})
    order by ${vector ? sql`embedding <=> ${vector}::vector` : sql`updated_at desc`}
    limit 5`)) as unknown as LiveFact[];

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
                       source_id = coalesce(${claim.sourceId}::uuid, source_id), updated_at = now()
      where id = ${repeat.id}`);
    return { factId: repeat.id, outcome: "reinforced" };
  }

  const [row] = (await tx.execute(sql`
    insert into facts (user_id, statement, category, subject, confidence, embedding, source_id)
    values (${userId}, ${claim.statement.trim()}, ${claim.category}, ${subject}, ${claim.confidence}, ${vector}::vector, ${claim.sourceId})
    returning id`)) as unknown as Array<{ id: string }>;
  if (!row) throw new Error("recordFact inserted no row");
  const changed = candidates.find(sameSubject);
  if (!changed) return { factId: row.id, outcome: "created" };
  await tx.execute(sql`update facts set superseded_by = ${row.id}, updated_at = now() where id = ${changed.id}`);
  return { factId: row.id, outcome: "superseded" };
}

/** The person's live facts, newest first. */
export async function liveFacts(tx: Tx, limit: number): Promise<Array<{ id: string; statement: string; category: string; subject: string; confidence: number }>> {
  return (await tx.execute(sql`
    select id, statement, category, subject, confidence from facts
    where superseded_by is null order by updated_at desc limit ${limit}`)) as unknown as Array<{
    id: string;
    statement: string;
    category: string;
    subject: string;
    confidence: number;
  }>;
}
