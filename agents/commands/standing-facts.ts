// /facts in Telegram: what Soma believes about the person — their current facts, numbered, most
// confident first, with how sure it is. Corrections go through the conversation ("I'm not vegetarian any
// more" → fact_correct) or the web app (PATCH/DELETE /api/facts/:id), which also shows the history.
import type { Database } from "../../db/database";
import { listFacts } from "../../db/repositories/facts";

/** Facts listed at most (a Telegram message holds 4096 characters). */
const LISTED = 30;
/** Longest statement a line shows. */
const LINE_TEXT = 200;

/** /facts: the person's current facts, numbered, with confidence. */
export async function factsCommand(db: Database, userId: string, argument: string): Promise<string> {
  if (argument)
    return '/facts takes nothing after it: it lists what I know about you. To correct a fact, just tell me (e.g. "I don\'t live in Berlin any more").';
  const facts = await db.withUser(userId, (tx) => listFacts(tx, { history: false, limit: LISTED + 1 }));
  if (facts.length === 0)
    return 'I don\'t know any facts about you yet. They come from what you tell me, e.g. "I live in Berlin" or "I\'m vegetarian".';
  const lines = facts.slice(0, LISTED).map((fact, i) => {
    const text = fact.statement.length > LINE_TEXT ? `${fact.statement.slice(0, LINE_TEXT - 1)}…` : fact.statement;
    return `${i + 1}. ${text} (${fact.category}, confidence ${Math.round(fact.confidence * 100)}%)`;
  });
  return [
    "What I know about you:",
    ...lines,
    ...(facts.length > LISTED ? [`…and more: the web app lists them all.`] : []),
    "",
    "Tell me if something is wrong or changed and I'll correct it; the web app shows each fact's history and can delete one.",
  ].join("\n");
}
