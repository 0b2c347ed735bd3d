// memory-consolidate: nightly, merges each person's near-duplicate entities (same type, names alike by
// trigram and by embedding) into the older one, keeping every alias, relation, event and source.
// Before merging it embeds the memories stored without an embedding (vector recall cannot see them):
// each night up to NIGHTLY_EMBED_LIMIT a person, so what an embedder outage left behind heals within a
// night or a few (a night the embedder is down merges all the same); on memory/imported (an import
// stores no embeddings) all of that person's, EMBED_BATCH a step (a failure is retried by Inngest), and
// then merges that person's entities as a night would. On memory/import.requested it reads an import of
// conversations from another assistant into memory instead (agents/conversation-import.ts): it is the
// same kind of work — memory arriving in bulk — and the same one-run-per-person concurrency.
//
// Each person is consolidated on their own (issue 19, finding 2): a failure — their merge timing out on
// pathological data, a row the store refuses — is logged with their id and counted, and everyone else
// in that step and in later ones is still embedded and merged (deps.ts, forOnePerson); only an outage
// fails a step, for Inngest to retry, and every part of the work is idempotent. The work per person is
// bounded (db/repositories/consolidate.ts). What Inngest keeps is counts: never a memory's name.
import { mergeNearDuplicates } from "../../../db/repositories/consolidate";
import { everyone } from "../../../db/repositories/digest";
import { missingEmbeddings, storeEmbeddings } from "../../../db/repositories/embeddings";
import type { InngestClient } from "../client";
import { chunks, forOnePerson, type WorkflowDeps } from "../deps";
import { importRequested, memoryImported } from "../events";
import { runImport } from "../../conversation-import";
import { inngestSteps } from "../steps";

/** Entities touched in this window are compared (a night's window plus a day of overlap). */
const LOOKBACK_MS = 2 * 86_400_000;
/** People consolidated per step. */
export const CONSOLIDATE_PEOPLE_PER_STEP = 50;
/** Texts per embedder call, and per step of an import's backfill. */
export const EMBED_BATCH = 100;
/** An import's backfill stops here (20,000 memories); the nightly runs embed whatever is left. */
const IMPORT_EMBED_STEPS = 200;
/** Memories embedded per person a night (a bounded cost per person inside a step of fifty). */
export const NIGHTLY_EMBED_LIMIT = 200;

interface Tally {
  embedded: number;
  merged: number;
  compared: number;
  failed: number;
}

export function memoryConsolidate(inngest: InngestClient, deps: WorkflowDeps) {
  return inngest.createFunction(
    {
      id: "memory-consolidate",
      name: "Merge near-duplicate memories",
      triggers: [{ cron: "TZ=UTC 30 3 * * *" }, memoryImported, importRequested],
      // One step at a time per person: a second import's backfill waits for the first's steps and finds
      // their rows embedded, instead of embedding them twice. A nightly run has no userId, so every one
      // evaluates to the same key (Inngest allows a key on a cron trigger), and there is one a night.
      concurrency: { key: "event.data.userId", limit: 1 },
      retries: 3,
    },
    async ({ event, step }) => {
      const now = deps.now();
      const window = { since: new Date(now.getTime() - LOOKBACK_MS), until: now };

      // Conversations imported from another assistant, read into memory (agents/conversation-import.ts).
      if (event.name === importRequested.name) return runImport(deps, importRequested.schema.parse(event.data), inngestSteps(step));

      if (event.name === memoryImported.name) {
        const { userId } = event.data; // validated against memoryImported by the SDK (EventValidationError, not retried)
        let embedded = 0;
        for (let i = 0; i < IMPORT_EMBED_STEPS; i++) {
          const batch = await step.run(`embed-${i}`, () => embedMissing(deps, userId, EMBED_BATCH));
          embedded += batch.stored;
          if (batch.found < EMBED_BATCH) break;
        }
        const merge = await step.run("merge", async () => {
          const one = await forOnePerson(deps, "memory-consolidate", userId, () => mergePerson(deps, userId, window));
          return one.ok ? { ...one.value, failed: 0 } : { merged: 0, compared: 0, failed: 1 };
        });
        const { failed, ...counts } = merge;
        return { people: 1, embedded, ...counts, ...(failed ? { failed } : {}) };
      }

      const people = await step.run("people", () => deps.db.withSystem((tx) => everyone(tx)));
      const total: Tally = { embedded: 0, merged: 0, compared: 0, failed: 0 };
      let embedderUnavailable = false;
      for (const [i, batch] of chunks(people, CONSOLIDATE_PEOPLE_PER_STEP).entries()) {
        const done = await step.run(`merge-${i}`, async () => {
          const tally: Tally = { embedded: 0, merged: 0, compared: 0, failed: 0 };
          const embedder = { available: true };
          for (const userId of batch) {
            const one = await forOnePerson(deps, "memory-consolidate", userId, () => consolidatePerson(deps, userId, window, embedder));
            if (!one.ok) {
              tally.failed++;
              continue;
            }
            tally.embedded += one.value.embedded;
            tally.merged += one.value.merged;
            tally.compared += one.value.compared;
          }
          return { ...tally, embedderUnavailable: !embedder.available };
        });
        for (const key of ["embedded", "merged", "compared", "failed"] as const) total[key] += done[key];
        embedderUnavailable ||= done.embedderUnavailable;
      }
      const { failed, ...counts } = total;
      return { people: people.length, ...counts, ...(failed ? { failed } : {}), ...(embedderUnavailable ? { embedderUnavailable } : {}) };
    },
  );
}

/** One person's night: their missing embeddings (while the embedder answers), then their merges. */
async function consolidatePerson(
  deps: WorkflowDeps,
  userId: string,
  window: { since: Date; until: Date },
  embedder: { available: boolean },
): Promise<{ embedded: number; merged: number; compared: number }> {
  let embedded = 0;
  // Embedded first: the merge then compares the new embeddings too.
  if (embedder.available) {
    try {
      embedded = (await embedMissing(deps, userId, NIGHTLY_EMBED_LIMIT)).stored;
    } catch (error) {
      // An embedder that is down does not hold the night's merges up: the rest waits for the next
      // night. One that still answers failed on this person's rows: their failure, not everyone's.
      if (await embedderAnswers(deps)) throw error;
      embedder.available = false;
    }
  }
  return { embedded, ...(await mergePerson(deps, userId, window)) };
}

async function mergePerson(deps: WorkflowDeps, userId: string, window: { since: Date; until: Date }) {
  const { merges, compared } = await deps.db.withUser(userId, (tx) => mergeNearDuplicates(tx, userId, window));
  return { merged: merges.length, compared };
}

/** Whether the embedder answers at all (one short text). */
async function embedderAnswers(deps: WorkflowDeps): Promise<boolean> {
  return deps.embedder.embed(["consolidation"]).then(
    (vectors) => vectors.length === 1,
    () => false,
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
