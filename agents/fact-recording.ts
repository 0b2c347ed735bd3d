// The facts of one message, extracted and recorded: what fact-extract runs for every turn
// (agents/workflows/functions/fact-extract.ts), and what the agent itself runs after a turn when no
// workflow engine is there to take the turn's event (npm start without the Inngest dev server,
// agents/turn/after-turn.ts), so that "I live in Lisbon" is known from the next message on either way.
//
// The words are read from the person's `sources` row (under row-level security); the model and the
// embedder are asked between transactions, none held open while they answer; a message nothing came of
// (no fact, no memory the turn's tools captured) is deleted once read: its words were kept only for this.
import type { LanguageModel } from "ai";
import type { Database } from "../db/database";
import { recordFact } from "../db/repositories/facts";
import { forgetUnusedMessage, messageText, recordSource } from "../db/repositories/memory";
import { profileOf } from "../db/repositories/people";
import { zoneOrUtc } from "../platform/local-time";
import { type ExtractedFact, extractFacts, sinceInstant } from "./fact-extraction";
import type { Embedder } from "./integrations/model/embeddings";

export interface FactRecordingDeps {
  db: Database;
  model: LanguageModel;
  embedder: Embedder;
}

/** A message the person sent, by its source; `text` only on events queued before the words moved to Postgres. */
export interface SaidMessage {
  userId: string;
  source: { kind: string; externalId: string };
  text?: string | undefined;
  /** When it was said, when not now (a conversation imported from another assistant). */
  toldAt?: Date;
}

/** The message's facts recorded, as ids and outcomes; none when the person or their message is gone. */
export async function extractAndRecord(deps: FactRecordingDeps, message: SaidMessage, today: string, abortSignal?: AbortSignal) {
  const { userId, source } = message;
  const said = await deps.db.withUser(userId, async (tx) => {
    const person = await profileOf(tx);
    if (!person) return null;
    const text = (await messageText(tx, userId, source)) ?? message.text ?? null;
    return text === null ? null : { text, zone: zoneOrUtc(person.timezone) };
  });
  if (!said) return [];
  const claims = await extractFacts(deps.model, said.text, today, abortSignal);
  return recordClaims(deps, { ...message, text: said.text }, claims, said.zone);
}

/**
 * Records the facts extracted from a message (`claims`, in the order they were said), or, when there are
 * none, forgets the message unless something else came of it.
 */
export async function recordClaims(
  deps: Pick<FactRecordingDeps, "db" | "embedder">,
  message: SaidMessage & { text: string },
  claims: ExtractedFact[],
  zone: string,
) {
  const { userId, source } = message;
  if (claims.length === 0) {
    await deps.db.withUser(userId, (tx) => forgetUnusedMessage(tx, userId, source));
    return [];
  }
  const embeddings = await deps.embedder.embed(claims.map((c) => c.statement));
  return deps.db.withUser(userId, async (tx) => {
    // The message's row (recorded by the turn, or here for an event that carried the words).
    const sourceId = await recordSource(tx, userId, { ...source, payload: { text: message.text } });
    const outcomes = [];
    for (const [i, { since, ...claim }] of claims.entries()) {
      const happenedAt = since ? sinceInstant(since, zone) : null;
      const told = message.toldAt ? { toldAt: message.toldAt } : {};
      outcomes.push(await recordFact(tx, userId, { ...claim, embedding: embeddings[i] ?? null, sourceId, happenedAt, ...told }));
    }
    return outcomes;
  });
}
