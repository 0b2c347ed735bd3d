// /forget <words> in Telegram: the memory or the fact those words name, whichever matches them best by
// its words (a fact: "/forget vegetarian" deletes "Is vegetarian" with its history, as fact_forget and
// DELETE /api/facts/:id do; a memory is archived, never recalled again, as memory_forget does). Only a
// match by words counts: a question's nearest neighbour by meaning is no reason to forget anything.
import type { Database } from "../../db/database";
import { deleteFact } from "../../db/repositories/facts";
import { archiveEntity, recallMemory } from "../../db/repositories/memory";

export async function forgetCommand(db: Database, userId: string, argument: string): Promise<string> {
  if (!argument) return "Tell me what to forget, e.g. /forget Dune";
  const forgotten = await db.withUser(userId, async (tx) => {
    const [best] = await recallMemory(tx, userId, { query: argument, limit: 1, embedding: null });
    if (!best?.matchedBy.some((m) => m === "fulltext" || m === "trigram")) return null;
    if (best.kind === "fact") return (await deleteFact(tx, best.fact.id)) ? `${best.fact.statement} (a fact about you)` : null;
    return (await archiveEntity(tx, best.entity.id)) ? `${best.entity.name} (${best.entity.type})` : null;
  });
  return forgotten ? `Forgotten: ${forgotten}.` : `I couldn't find anything called "${argument}".`;
}
