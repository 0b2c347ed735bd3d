// The tools that change what Soma knows about the person (their facts, fact-extract's output): correct a
// fact they corrected ("I'm not vegetarian any more" supersedes "Is vegetarian", which stays as history)
// and forget one they ask to have forgotten (deleted with its history). Bound to this agent's person like
// the memory tools, and guarded the same way when email text is in view (agents/turn/tools/untrusted-memory.ts).
import { tool, type ModelMessage, type ToolSet } from "ai";
import { z } from "zod";
import { correctFact, deleteFact, factStatements } from "../../../db/repositories/facts";
import { recordSource } from "../../../db/repositories/memory";
import { FACT_CATEGORIES } from "../../fact-extraction";
import { embedOne } from "../../integrations/model/embeddings";
import { thirdPartyRefusal, type ToolContext } from "./context";
import type { GuardedTool } from "./untrusted-memory";

const factId = z.uuid().describe('id of a fact from memory_recall (results of kind "fact")');

export function factTools(context: ToolContext): ToolSet {
  const { db, userId, embedder } = context;
  const refusal = (name: GuardedTool, id: string, messages: ModelMessage[]) =>
    thirdPartyRefusal(name, messages, () => db.withUser(userId, (tx) => factStatements(tx, [id])));

  return {
    fact_correct: tool({
      description:
        'Correct a fact about the person when they say it changed or was wrong ("I\'m not vegetarian any more"). Find the fact with memory_recall first; the old fact is kept as history.',
      inputSchema: z.object({
        factId,
        statement: z.string().trim().min(3).max(300).describe('The corrected claim in the third person, e.g. "Is not vegetarian"'),
        category: z.enum(FACT_CATEGORIES).optional(),
      }),
      execute: async ({ factId: id, statement, category }, { messages }) => {
        const refused = await refusal("fact_correct", id, messages);
        if (refused) return { error: refused };
        const embedding = await embedOne(embedder, statement);
        const result = await db.withUser(userId, async (tx) => {
          const sourceId = await recordSource(tx, userId, context.source);
          return correctFact(tx, userId, id, { statement, category, embedding, sourceId });
        });
        switch (result.outcome) {
          case "not_found":
            return { error: "unknown fact" };
          case "superseded":
            return { error: `that fact was already replaced; the current one is ${result.currentId}` };
          case "unchanged":
            return { factId: result.fact.id, corrected: false };
          case "corrected":
            return { factId: result.fact.id, corrected: true, replaces: result.supersededId };
        }
      },
    }),

    fact_forget: tool({
      description: "Forget a fact about the person when they ask you to (it is deleted with its history and never used again).",
      inputSchema: z.object({ factId }),
      execute: async ({ factId: id }, { messages }) => {
        const refused = await refusal("fact_forget", id, messages);
        if (refused) return { error: refused };
        const deleted = await db.withUser(userId, (tx) => deleteFact(tx, id));
        return deleted ? { deleted: true } : { error: "unknown fact" };
      },
    }),
  };
}
