// What the proactive-message suites (briefs.test.ts, weekly-review.test.ts) share: memories, mail and
// delivery claims of a test person on the test Postgres, the event a cron trigger starts a run with,
// and the steps a run made.
import { sql } from "drizzle-orm";
import { recordEmail } from "../../../db/repositories/mail";
import { captureEntity, recordSource } from "../../../db/repositories/memory";
import { testDb } from "./harness";

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

export type Spy = { mock: { calls: unknown[][] } };

/** Each entity in its own transaction, so created_at (the transaction's now()) orders them. */
export async function capture(userId: string, type: string, name: string, properties: Record<string, unknown> = {}) {
  return testDb().withUser(userId, async (tx) => {
    const sourceId = await recordSource(tx, userId, {
      kind: "telegram",
      externalId: `msg-${crypto.randomUUID()}`,
      payload: { text: `about ${name}` },
    });
    return (await captureEntity(tx, userId, { type, name, properties, embedding: null, sourceId })).entityId;
  });
}

export async function email(
  userId: string,
  from: { name: string | null; email: string },
  subject: string,
  receivedAt = new Date(Date.now() - 2 * HOUR),
) {
  await testDb().withUser(userId, (tx) =>
    recordEmail(tx, userId, { messageId: `gm-${crypto.randomUUID()}`, threadId: null, from, subject, receivedAt, snippet: subject }, null),
  );
}

/** The delivery claims (sources of kind brief / weekly-review) the person has. */
export async function claims(userId: string, kind: "brief" | "weekly-review") {
  return (await testDb().withUser(userId, (tx) =>
    tx.execute(sql`select external_id, payload from sources where kind = ${kind} order by created_at`),
  )) as unknown as Array<{ external_id: string; payload: { text: string } }>;
}

/** The event a cron trigger starts a run with (@inngest/test would otherwise mock a function.invoked one). */
export function cronTick(cron: string) {
  return { name: "inngest/scheduled.timer", data: { cron } } as const;
}

/** Names of the step.run calls a run made (the spies of @inngest/test). */
export function stepsRun(ctx: { step: { run: unknown } }): string[] {
  return (ctx.step.run as Spy).mock.calls.map(([id]) => id as string);
}
