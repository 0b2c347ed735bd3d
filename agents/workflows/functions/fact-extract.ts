// fact-extract: after every conversation turn, the durable claims the person made → `facts`
// (deduplicated at cosine ≥ 0.85, a changed claim superseding the old row, confidence as a moving
// average), since when it holds where the person said so ("since 2019": the first instant of that year
// on their clock). Runs one at a time per person, so two turns never race on the same facts.
import { recordFact } from "../../../db/repositories/facts";
import { recordSource } from "../../../db/repositories/memory";
import { personZone } from "../../../db/repositories/people";
import { extractFacts, sinceInstant } from "../../fact-extraction";
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
      // "Since last year" counts back from the day the turn was sent (in UTC: the person's clock is
      // read when a date becomes an instant, below; a day's difference does not move a year or a month).
      const today = new Date(event.ts ?? deps.now().getTime()).toISOString().slice(0, 10);
      const claims = await step.run("extract", () => extractFacts(deps.model, turn.text, today));
      if (claims.length === 0) return { facts: [] };
      return step.run("record", async () => {
        const embeddings = await deps.embedder.embed(claims.map((c) => c.statement));
        const facts = await deps.db.withUser(turn.userId, async (tx) => {
          const zone = await personZone(tx);
          const sourceId = await recordSource(tx, turn.userId, { ...turn.source, payload: { text: turn.text } });
          const outcomes = [];
          for (const [i, { since, ...claim }] of claims.entries()) {
            const happenedAt = since ? sinceInstant(since, zone) : null;
            const result = await recordFact(tx, turn.userId, { ...claim, embedding: embeddings[i] ?? null, sourceId, happenedAt });
            outcomes.push({ statement: claim.statement, ...result });
          }
          return outcomes;
        });
        return { facts };
      });
    },
  );
}
