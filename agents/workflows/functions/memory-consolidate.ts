// memory-consolidate: nightly, merges each person's near-duplicate entities (same type, names alike by
// trigram and by embedding) into the older one, keeping every alias, relation, event and source.
// Before merging it embeds the memories stored without an embedding (vector recall cannot see them):
// each night up to NIGHTLY_EMBED_LIMIT a person, so what an embedder outage left behind heals within a
// night or a few (a night the embedder is down merges all the same); on memory/imported (an import
// stores no embeddings) all of that person's, EMBED_BATCH a step (a failure is retried by Inngest), and
// then merges that person's entities as a night would.
import { mergeNearDuplicates } from "../../../db/repositories/consolidate";
import { everyone } from "../../../db/repositories/digest";
import { missingEmbeddings, storeEmbeddings } from "../../../db/repositories/embeddings";
import type { InngestClient } from "../client";
import { chunks, type WorkflowDeps } from "../deps";
import { memoryImported } from "../events";

/** Entities touched in this window are compared (a night's window plus a day of overlap). */
const LOOKBACK_MS = 2 * 86_400_000;
const PEOPLE_PER_STEP = 50;
/** Texts per embedder call, and per step of an import's backfill. */
export const EMBED_BATCH = 100;
/** An import's backfill stops here (20,000 memories); the nightly runs embed whatever is left. */
const IMPORT_EMBED_STEPS = 200;
/** Memories embedded per person a night (a bounded cost per person inside a step of fifty). */
export const NIGHTLY_EMBED_LIMIT = 200;

export function memoryConsolidate(inngest: InngestClient, deps: WorkflowDeps) {
  return inngest.createFunction(
    {
      id: "memory-consolidate",
      name: "Merge near-duplicate memories",
      triggers: [{ cron: "TZ=UTC 30 3 * * *" }, memoryImported],
      // One step at a time per person: a second import's backfill waits for the first's steps and finds
      // their rows embedded, instead of embedding them twice. A nightly run has no userId, so every one
      // evaluates to the same key (Inngest allows a key on a cron trigger), and there is one a night.
      concurrency: { key: "event.data.userId", limit: 1 },
      retries: 3,
    },
    async ({ event, step }) => {
      const since = new Date(deps.now().getTime() - LOOKBACK_MS);
      const merge = async (userId: string) =>
        (await deps.db.withUser(userId, (tx) => mergeNearDuplicates(tx, userId, since))).map((m) => ({ userId, ...m }));

      if (event.name === memoryImported.name) {
        const { userId } = event.data; // validated against memoryImported by the SDK (EventValidationError, not retried)
        let embedded = 0;
        for (let i = 0; i < IMPORT_EMBED_STEPS; i++) {
          const batch = await step.run(`embed-${i}`, () => embedMissing(deps, userId, EMBED_BATCH));
          embedded += batch.stored;
          if (batch.found < EMBED_BATCH) break;
        }
        const merged = await step.run("merge", () => merge(userId));
        return { people: 1, embedded, merged };
      }

      const people = await step.run("people", () => deps.db.withSystem((tx) => everyone(tx)));
      let embedded = 0;
      let embedderUnavailable = false;
      const merges = [];
      for (const [i, batch] of chunks(people, PEOPLE_PER_STEP).entries()) {
        const done = await step.run(`merge-${i}`, async () => {
          let embeddedHere = 0;
          let unavailable = false;
          const merged = [];
          for (const userId of batch) {
            // Embedded first: the merge then compares the new embeddings too. An embedder that is down
            // does not hold the night's merges up: the rest waits for the next night.
            if (!unavailable) {
              try {
                embeddedHere += (await embedMissing(deps, userId, NIGHTLY_EMBED_LIMIT)).stored;
              } catch {
                unavailable = true;
              }
            }
            merged.push(...(await merge(userId)));
          }
          return { embedded: embeddedHere, embedderUnavailable: unavailable, merged };
        });
        embedded += done.embedded;
        embedderUnavailable ||= done.embedderUnavailable;
        merges.push(...done.merged);
      }
      return { people: people.length, embedded, ...(embedderUnavailable ? { embedderUnavailable } : {}), merged: merges };
    },
  );
}

/**
 * Embeds up to `limit` of the person's memories that have no embedding: how many it found, and how
 * many it stored (fewer when a writer embedded some meanwhile). An embedder failure throws, so the step
 * fails and is retried, having stored nothing of that batch.
 */
async function embedMissing(deps: WorkflowDeps, userId: string, limit: number): Promise<{ found: number; stored: number }> {
  const missing = await deps.db.withUser(userId, (tx) => missingEmbeddings(tx, userId, limit));
  let stored = 0;
  // The embedder is called between transactions: none is held open while a remote model answers.
  for (const batch of chunks(missing, EMBED_BATCH)) {
    const vectors = await deps.embedder.embed(batch.map((m) => m.text));
    // Paired by position: a short or long answer would put vectors on the wrong rows.
    if (vectors.length !== batch.length) throw new Error(`the embedder answered ${vectors.length} embeddings for ${batch.length} texts`);
    stored += await deps.db.withUser(userId, (tx) =>
      storeEmbeddings(
        tx,
        batch.map((m, i) => ({ ...m, embedding: vectors[i]! })),
      ),
    );
  }
  return { found: missing.length, stored };
}
