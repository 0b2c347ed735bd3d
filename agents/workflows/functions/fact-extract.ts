// fact-extract: after every conversation turn, the durable claims the person made → `facts`
// (deduplicated at cosine ≥ 0.85, a changed claim superseding the old row, confidence as a moving
// average), since when it holds where the person said so ("since 2019": the first instant of that year
// on their clock). Runs one at a time per person, so two turns never race on the same facts.
//
// The words never pass through Inngest: the event names the message, the one step reads its text
// from the person's `sources` row (under row-level security), asks the model, and records the facts,
// and what Inngest keeps (the step's output, the result) is fact ids and outcomes. A person deleted
// since the turn has no row left, and nothing happens. Extraction and recording are one step for that
// reason; a retry asks the model again, and recordFact teaches nothing twice from one message. A
// message nothing came of (no fact, no memory the turn's tools captured) is deleted once read: its words
// were kept only for this, and a row per message would fill every export.
import { extractAndRecord } from "../../fact-recording";
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
      return step.run("extract", async () => ({ facts: await extractAndRecord(deps, turn, today) }));
    },
  );
}
