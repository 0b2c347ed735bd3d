// The eight workflow functions of the app "soma", built around one set of dependencies. The Worker
// serves them at /api/workflows (worker/routes/workflows.ts); tests run each with @inngest/test.
import { Inngest } from "inngest";
import { clientOptions, type InngestClient } from "./client";
import { tracingMiddleware, type WorkflowDeps } from "./deps";
import { briefGenerate } from "./functions/brief-generate";
import { factExtract } from "./functions/fact-extract";
import { mailIngest } from "./functions/mail-ingest";
import { mailWatchRenew } from "./functions/mail-watch-renew";
import { memoryConsolidate } from "./functions/memory-consolidate";
import { morningBriefCron } from "./functions/morning-brief-cron";
import { reminderDeliver } from "./functions/reminder-deliver";
import { weeklyReview } from "./functions/weekly-review";

export function createWorkflows(deps: WorkflowDeps) {
  const inngest = new Inngest({ ...clientOptions(deps.config), middleware: [tracingMiddleware(deps.tracer)] }) as InngestClient;
  const functions = {
    factExtract: factExtract(inngest, deps),
    mailIngest: mailIngest(inngest, deps),
    mailWatchRenew: mailWatchRenew(inngest, deps),
    memoryConsolidate: memoryConsolidate(inngest, deps),
    reminderDeliver: reminderDeliver(inngest, deps),
    morningBriefCron: morningBriefCron(inngest, deps),
    briefGenerate: briefGenerate(inngest, deps),
    weeklyReview: weeklyReview(inngest, deps),
  };
  return { inngest, functions, list: Object.values(functions) };
}
