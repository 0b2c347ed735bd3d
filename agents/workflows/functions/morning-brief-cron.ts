// morning-brief-cron: every hour, finds the people for whom it is now 08:00 and asks for their brief
// (brief/requested), one event per person and local date, so a retried fan-out asks only once. People who
// moved their brief or turned it off are not among them (agents/schedules/routines.ts).
import { peopleAtLocalHour } from "../../../db/repositories/digest";
import type { InngestClient } from "../client";
import { chunks, type WorkflowDeps } from "../deps";
import { briefRequested } from "../events";
import { ROUTINE_DEFAULTS } from "../../schedules/routines";

const BRIEF_HOUR = Number(ROUTINE_DEFAULTS.brief.time.slice(0, 2));

export function morningBriefCron(inngest: InngestClient, deps: WorkflowDeps) {
  return inngest.createFunction(
    { id: "morning-brief-cron", name: "Morning brief fan-out", triggers: [{ cron: "TZ=UTC 0 * * * *" }], retries: 3 },
    async ({ step }) => {
      const due = await step.run("people-at-eight", () =>
        deps.db.withSystem((tx) => peopleAtLocalHour(tx, "brief", BRIEF_HOUR, deps.now())),
      );
      for (const [i, batch] of chunks(due, 500).entries()) {
        await step.sendEvent(
          `request-briefs-${i}`,
          batch.map(({ userId, localDate }) => briefRequested.create({ userId, date: localDate }, { id: `brief-${userId}-${localDate}` })),
        );
      }
      return { requested: due.length };
    },
  );
}
