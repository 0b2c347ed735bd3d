// mail-watch-renew: daily, renews the Gmail watch (users.watch on GMAIL_PUBSUB_TOPIC) of every
// connection whose watch expires within 48 hours or was never set. `npm run mail:watch` runs the
// same renewal for every connected person at once (the one-time wiring step).
import { NonRetriableError } from "inngest";
import { saveMailState, watchesExpiringBefore } from "../../../db/repositories/connections";
import { describeError } from "../../../platform/log";
import { gmailFor } from "../../integrations/google/google-account";
import type { InngestClient } from "../client";
import { chunks, isOutage, ownWords, type WorkflowDeps } from "../deps";

export const RENEW_WITHIN_MS = 48 * 3600 * 1000;
const PEOPLE_PER_STEP = 20;

export function mailWatchRenew(inngest: InngestClient, deps: WorkflowDeps) {
  return inngest.createFunction(
    { id: "mail-watch-renew", name: "Renew Gmail watches", triggers: [{ cron: "TZ=UTC 0 5 * * *" }], retries: 3 },
    async ({ step }) => {
      if (!deps.config.GMAIL_PUBSUB_TOPIC) throw new NonRetriableError("GMAIL_PUBSUB_TOPIC is not set");
      const before = new Date(deps.now().getTime() + RENEW_WITHIN_MS);
      const people = await step.run("expiring", () => deps.db.withSystem((tx) => watchesExpiringBefore(tx, before)));
      const results = [];
      for (const [i, batch] of chunks(people, PEOPLE_PER_STEP).entries()) {
        results.push(...(await step.run(`renew-${i}`, () => renewWatches(deps, batch))));
      }
      return { renewed: results.filter((r) => r.ok).length, failed: results.filter((r) => !r.ok) };
    },
  );
}

export interface WatchResult {
  userId: string;
  ok: boolean;
  expiresAt?: string;
  error?: string;
}

/**
 * users.watch for each person; one person's failure (a revoked grant, their own data) does not stop the
 * others. An outage (Postgres not answering) is thrown instead, so that Inngest retries the step: a
 * watch renewed twice is the same watch.
 */
export async function renewWatches(deps: Pick<WorkflowDeps, "config" | "db">, userIds: string[]): Promise<WatchResult[]> {
  const topic = deps.config.GMAIL_PUBSUB_TOPIC;
  if (!topic) throw new NonRetriableError("GMAIL_PUBSUB_TOPIC is not set");
  const results: WatchResult[] = [];
  for (const userId of userIds) {
    try {
      const account = await gmailFor(deps.config, deps.db, userId);
      if (!account) {
        results.push({ userId, ok: false, error: "no Google connection" });
        continue;
      }
      const watch = await account.gmail.watch(topic);
      const expiresAt = new Date(Number(watch.expiration));
      // The first watch also marks where mail intake starts; later ones never rewind it.
      await deps.db.withUser(userId, (tx) => saveMailState(tx, { startHistoryId: watch.historyId, watchExpiresAt: expiresAt }));
      results.push({ userId, ok: true, expiresAt: expiresAt.toISOString() });
    } catch (error) {
      if (await isOutage(deps, error)) throw error;
      results.push({ userId, ok: false, error: describeError(ownWords(error)) });
    }
  }
  return results;
}
