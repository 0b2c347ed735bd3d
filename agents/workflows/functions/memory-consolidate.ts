// memory-consolidate: nightly, merges each person's near-duplicate entities (same type, names alike by
// trigram and by embedding) into the older one, keeping every alias, relation, event and source.
import { mergeNearDuplicates } from "../../../db/repositories/consolidate";
import { everyone } from "../../../db/repositories/digest";
import type { InngestClient } from "../client";
import { chunks, type WorkflowDeps } from "../deps";

/** Entities touched in this window are compared (a night's window plus a day of overlap). */
const LOOKBACK_MS = 2 * 86_400_000;
const PEOPLE_PER_STEP = 50;

export function memoryConsolidate(inngest: InngestClient, deps: WorkflowDeps) {
  return inngest.createFunction(
    { id: "memory-consolidate", name: "Merge near-duplicate memories", triggers: [{ cron: "TZ=UTC 30 3 * * *" }], retries: 3 },
    async ({ step }) => {
      const since = new Date(deps.now().getTime() - LOOKBACK_MS);
      const people = await step.run("people", () => deps.db.withSystem((tx) => everyone(tx)));
      const merges = [];
      for (const [i, batch] of chunks(people, PEOPLE_PER_STEP).entries()) {
        merges.push(
          ...(await step.run(`merge-${i}`, async () => {
            const done = [];
            for (const userId of batch) {
              const merged = await deps.db.withUser(userId, (tx) => mergeNearDuplicates(tx, userId, since));
              done.push(...merged.map((m) => ({ userId, ...m })));
            }
            return done;
          })),
        );
      }
      return { people: people.length, merged: merges };
    },
  );
}
