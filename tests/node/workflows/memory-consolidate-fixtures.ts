// What the memory-consolidate suites (memory-consolidate-merge.test.ts, memory-consolidate-embeddings.test.ts)
// share: an entity captured as memory_capture stores it (its own source, its embedding or none), and a
// full nightly run of memory-consolidate with @inngest/test whose "people" step is mocked to the given
// people: Postgres is shared with test files running in parallel, and a real run would walk them all.
import { expect } from "vitest";
import { localEmbedder } from "../../../agents/integrations/model/embeddings";
import { captureEntity, recordSource } from "../../../db/repositories/memory";
import { runOnce, testDb, testWorkflows } from "./harness";

/** What a run returns: counts only (which entities were merged is read from Postgres, under RLS). */
export interface MergeOutput {
  people: number;
  embedded: number;
  merged: number;
  /** Candidate pairs compared (bounded per person). */
  compared: number;
  /** People whose consolidation failed (logged with their id). */
  failed?: number;
  embedderUnavailable?: boolean;
}

/** The embedding memory_capture stores for an entity (agents/turn/tools/memory-tools.ts), from the workflows' embedder. */
export async function captureEmbedding(type: string, name: string): Promise<number[]> {
  return (await localEmbedder.embed([`${type}: ${name}`]))[0]!;
}

/**
 * One entity with its own source, in its own transaction (created_at orders them: the first is older),
 * embedded as memory_capture embeds it unless `embedding` says otherwise (null: stored without one).
 */
export async function capture(
  userId: string,
  type: string,
  name: string,
  options: { properties?: Record<string, unknown>; embedding?: number[] | null } = {},
) {
  const embedding = options.embedding === undefined ? await captureEmbedding(type, name) : options.embedding;
  return testDb().withUser(userId, async (tx) => {
    const sourceId = await recordSource(tx, userId, {
      kind: "telegram",
      externalId: `msg-${crypto.randomUUID()}`,
      payload: { text: `about ${name}` },
    });
    const { entityId } = await captureEntity(tx, userId, { type, name, properties: options.properties ?? {}, embedding, sourceId });
    return { id: entityId, sourceId };
  });
}

/** The event the cron trigger starts a run with (@inngest/test would otherwise mock a function.invoked one). */
export const nightly = { name: "inngest/scheduled.timer", data: { cron: "TZ=UTC 30 3 * * *" } } as const;

/** A full run over exactly these people (a fresh steps array per run: @inngest/test appends to it). */
export async function consolidate(people: string[], now?: Date) {
  const { result, error, ctx } = await runOnce(testWorkflows(now ? { now } : {}).functions.memoryConsolidate, nightly, {
    steps: [{ id: "people", handler: () => people }],
  });
  expect(error).toBeUndefined();
  return { output: result as MergeOutput, ctx };
}
