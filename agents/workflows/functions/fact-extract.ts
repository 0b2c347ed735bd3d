// fact-extract: after every conversation turn, the durable claims the person made → `facts`
// (deduplicated at cosine ≥ 0.85, a changed claim superseding the old row, confidence as a moving
// average). Runs one at a time per person, so two turns never race on the same facts.
import { recordFact } from "../../../db/repositories/facts";
import { recordSource } from "../../../db/repositories/memory";
import { extractFacts } from "../../facts";
import type { InngestClient } from "../client";
import type { WorkflowDeps } from "../deps";
import { turnCompleted } from "../events";

export function factExtract(inngest: InngestClient, deps: WorkflowDeps) {
  return inngest.createFunction(
    {
      id: "fact-extract",
      name: "Extract facts from a conversation turn",
      triggers: [turnCompleted],
      concurrency: { key: "event.data.userId", limit: 1 },
      retries: 3,
    },
    async ({ event, step }) => {
      const turn = event.data; // validated against turnCompleted by the SDK (EventValidationError, not retried)
      const claims = await step.run("extract", () => extractFacts(deps.model, turn.text));
      if (claims.length === 0) return { facts: [] };
      return step.run("record", async () => {
        const embeddings = await deps.embedder.embed(claims.map((c) => c.statement));
        const facts = await deps.db.withUser(turn.userId, async (tx) => {
          const sourceId = await recordSource(tx, turn.userId, { ...turn.source, payload: { text: turn.text } });
          const outcomes = [];
          for (const [i, claim] of claims.entries()) {
            const result = await recordFact(tx, turn.userId, { ...claim, embedding: embeddings[i] ?? null, sourceId });
            outcomes.push({ statement: claim.statement, ...result });
          }
          return outcomes;
        });
        return { facts };
      });
    },
  );
}
