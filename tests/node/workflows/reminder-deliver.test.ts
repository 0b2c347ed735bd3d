// reminder-deliver with @inngest/test: the real function on the test Postgres (RLS through
// Database.withUser) and the Bot API stand-in. The engine's sleep is the one thing replaced: @inngest/test
// never resolves an unmocked step.sleepUntil, so "wait-until-due" is mocked as elapsed and the tests
// assert what the function asked to sleep until.
import { InngestTestEngine } from "@inngest/test";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { TelegramSender } from "../../../agents/integrations/telegram-sender";
import { deletePerson } from "../../../db/repositories/auth";
import { recordSource } from "../../../db/repositories/memory";
import { cancelReminder, createReminder, type CancelOutcome } from "../../../db/repositories/reminders";
import { BOT_TOKEN, keptWords, langfuseEvents, newPerson, runOnce, sentTexts, standInUrl, testDb, testWorkflows } from "./harness";

/**
 * A fresh mock per run: @inngest/test pushes every step a run completes onto the `steps` array it was
 * given, so a shared array would replay one run's step outputs into the next.
 */
const elapsed = () => [{ id: "wait-until-due", handler: () => null }];

function reminderEvent(userId: string, eventId: string, at: Date) {
  return { name: "schedule/reminder.created", id: `reminder-${eventId}`, data: { userId, eventId, at: at.toISOString() } } as const;
}

async function scheduleReminder(userId: string, text: string, at = new Date(Date.now() + 3_600_000)) {
  const eventId = await testDb().withUser(userId, async (tx) => {
    const sourceId = await recordSource(tx, userId, {
      kind: "telegram",
      externalId: `msg-${crypto.randomUUID()}`,
      payload: { text: `remind me: ${text}` },
    });
    return createReminder(tx, userId, { text, at, sourceId });
  });
  return { eventId, at };
}

/** The reminder row as its owner sees it (undefined when RLS hides it or it is gone). */
async function reminderRow(userId: string, eventId: string) {
  const rows = (await testDb().withUser(userId, (tx) =>
    tx.execute(sql`select status, kind, payload, occurred_at from events where id = ${eventId}`),
  )) as unknown as Array<{ status: string; kind: string; payload: { text: string }; occurred_at: string | Date }>;
  return rows[0];
}

/** Names of the step.run calls a run made (the spies of @inngest/test). */
function stepsRun(ctx: { step: { run: unknown } }): string[] {
  return (ctx.step.run as { mock: { calls: Array<[string, ...unknown[]]> } }).mock.calls.map(([id]) => id);
}

describe("reminder-deliver", () => {
  it("sleeps until the reminder is due, sends it to the person's chat and marks the row delivered", async () => {
    const person = await newPerson({ telegram: true });
    const { eventId, at } = await scheduleReminder(person.id, "call mum about the tickets", new Date(Date.now() + 2 * 3_600_000));
    expect((await reminderRow(person.id, eventId))?.status).toBe("scheduled");

    const { result, error, ctx, state } = await runOnce(testWorkflows().functions.reminderDeliver, reminderEvent(person.id, eventId, at), {
      steps: elapsed(),
    });
    expect(error).toBeUndefined();
    expect(result).toEqual({ delivered: true, channels: ["telegram"] });
    expect(ctx.step.sleepUntil).toHaveBeenCalledWith("wait-until-due", at);
    expect(stepsRun(ctx)).toEqual(expect.arrayContaining(["claim", "send-telegram", "finish"]));
    expect(stepsRun(ctx)).not.toContain("no-channel");

    expect(await sentTexts(person.chatId!)).toEqual(["⏰ Reminder: call mum about the tickets"]);
    // What Inngest keeps of the run (its result, each step's output) has no word of the reminder.
    expect(await keptWords({ result, state }, /mum|tickets|Reminder/)).toEqual([]);
    const row = await reminderRow(person.id, eventId);
    expect(row).toMatchObject({ status: "delivered", kind: "reminder", payload: { text: "call mum about the tickets" } });
  });

  it("sends one message when the same event arrives twice", async () => {
    const person = await newPerson({ telegram: true });
    const { eventId, at } = await scheduleReminder(person.id, "water the plants");
    const { reminderDeliver } = testWorkflows().functions;
    const event = reminderEvent(person.id, eventId, at);

    const first = await runOnce(reminderDeliver, event, { steps: elapsed() });
    const second = await runOnce(reminderDeliver, event, { steps: elapsed() });
    expect(first.result).toEqual({ delivered: true, channels: ["telegram"] });
    expect(second.result).toEqual({ delivered: false, reason: "not scheduled (already delivered or removed)" });
    expect(stepsRun(second.ctx)).not.toContain("send-telegram");

    expect(await sentTexts(person.chatId!)).toEqual(["⏰ Reminder: water the plants"]);
    expect((await reminderRow(person.id, eventId))?.status).toBe("delivered");
  });

  it("sends nothing for a reminder that is no longer scheduled (already delivered, or deleted)", async () => {
    const person = await newPerson({ telegram: true });
    const delivered = await scheduleReminder(person.id, "already sent");
    const removed = await scheduleReminder(person.id, "removed by the person");
    await testDb().withUser(person.id, async (tx) => {
      await tx.execute(sql`update events set status = 'delivered' where id = ${delivered.eventId}`);
      await tx.execute(sql`delete from events where id = ${removed.eventId}`);
    });
    const { reminderDeliver } = testWorkflows().functions;

    for (const reminder of [delivered, removed]) {
      const { result, ctx } = await runOnce(reminderDeliver, reminderEvent(person.id, reminder.eventId, reminder.at), { steps: elapsed() });
      expect(result).toEqual({ delivered: false, reason: "not scheduled (already delivered or removed)" });
      expect(stepsRun(ctx)).toEqual(["claim"]);
    }
    expect(await sentTexts(person.chatId!)).toEqual([]);
    expect((await reminderRow(person.id, delivered.eventId))?.status).toBe("delivered");
    expect(await reminderRow(person.id, removed.eventId)).toBeUndefined();
  });

  it("sends nothing for a reminder the person cancelled before it was due, and leaves it cancelled", async () => {
    const person = await newPerson({ telegram: true });
    const { eventId, at } = await scheduleReminder(person.id, "cancelled dinner");
    const cancel = await testDb().withUser(person.id, (tx) => cancelReminder(tx, eventId));
    expect(cancel.outcome).toBe("cancelled");

    const { result, ctx } = await runOnce(testWorkflows().functions.reminderDeliver, reminderEvent(person.id, eventId, at), {
      steps: elapsed(),
    });
    expect(result).toEqual({ delivered: false, reason: "cancelled by the person" });
    expect(stepsRun(ctx)).toEqual(["claim"]);
    expect(await sentTexts(person.chatId!)).toEqual([]);
    expect((await reminderRow(person.id, eventId))?.status).toBe("cancelled");
  });

  it("refuses a cancel that comes once the delivery has claimed the reminder: it is sent once, never half-cancelled", async () => {
    const person = await newPerson({ telegram: true });
    const { eventId, at } = await scheduleReminder(person.id, "last-second change of mind");
    // The person cancels while the message is on its way (after the claim, before the send returns).
    let during: CancelOutcome | undefined;
    class CancellingSender extends TelegramSender {
      override async sendText(chatId: number, text: string): Promise<void> {
        during = await testDb().withUser(person.id, (tx) => cancelReminder(tx, eventId));
        return super.sendText(chatId, text);
      }
    }
    const telegram = new CancellingSender(BOT_TOKEN, standInUrl, { sleep: async () => {} });
    const { result } = await runOnce(testWorkflows({ telegram }).functions.reminderDeliver, reminderEvent(person.id, eventId, at), {
      steps: elapsed(),
    });
    expect(result).toEqual({ delivered: true, channels: ["telegram"] });
    expect(during).toMatchObject({ outcome: "too-late", reminder: { status: "delivering" } });
    expect(await sentTexts(person.chatId!)).toEqual(["⏰ Reminder: last-second change of mind"]);
    expect((await reminderRow(person.id, eventId))?.status).toBe("delivered");
  });

  it("reads the words when it sends them, under the person's own transaction: nothing once the account is deleted after the claim", async () => {
    const person = await newPerson({ telegram: true });
    const { eventId, at } = await scheduleReminder(person.id, "a deleted person's errand");
    const { reminderDeliver } = testWorkflows().functions;
    const claimed = await new InngestTestEngine({ function: reminderDeliver }).executeStep("claim", {
      events: [reminderEvent(person.id, eventId, at)],
      steps: elapsed(),
    });
    expect(claimed.result).toEqual({ claimed: true, telegram: true, push: false });
    await deletePerson(testDb(), person.id);
    const { result, error, ctx } = await runOnce(reminderDeliver, reminderEvent(person.id, eventId, at), {
      steps: [...elapsed(), { id: "claim", handler: () => ({ claimed: true, telegram: true, push: false }) }],
    });
    expect(error).toBeUndefined();
    expect(result).toEqual({ delivered: false, reason: "removed before it was sent" });
    expect(stepsRun(ctx)).not.toContain("finish");
    expect(await sentTexts(person.chatId!)).toEqual([]);
  });

  it("marks the reminder undeliverable when the person has no Telegram chat and no device", async () => {
    const person = await newPerson();
    const { eventId, at } = await scheduleReminder(person.id, "stretch");
    const { result, ctx } = await runOnce(testWorkflows().functions.reminderDeliver, reminderEvent(person.id, eventId, at), {
      steps: elapsed(),
    });
    expect(result).toEqual({ delivered: false, reason: "the person has no Telegram chat and no device with notifications on" });
    expect(stepsRun(ctx)).toEqual(["claim", "no-channel"]);
    expect((await reminderRow(person.id, eventId))?.status).toBe("undeliverable");
  });

  it("delivers nothing for another person's reminder and leaves that person's row untouched (RLS)", async () => {
    const alice = await newPerson({ telegram: true });
    const bob = await newPerson({ telegram: true });
    const bobs = await scheduleReminder(bob.id, "Bob's secret appointment");
    const { reminderDeliver } = testWorkflows().functions;

    // An event naming Alice with Bob's row: Alice's transaction cannot see (or claim) Bob's reminder.
    const forged = await runOnce(reminderDeliver, reminderEvent(alice.id, bobs.eventId, bobs.at), { steps: elapsed() });
    expect(forged.result).toEqual({ delivered: false, reason: "not scheduled (already delivered or removed)" });
    expect(await sentTexts(alice.chatId!)).toEqual([]);
    expect(await sentTexts(bob.chatId!)).toEqual([]);
    expect(await reminderRow(alice.id, bobs.eventId)).toBeUndefined();
    expect((await reminderRow(bob.id, bobs.eventId))?.status).toBe("scheduled");

    // Bob's own event still delivers it, to Bob.
    const own = await runOnce(reminderDeliver, reminderEvent(bob.id, bobs.eventId, bobs.at), { steps: elapsed() });
    expect(own.result).toEqual({ delivered: true, channels: ["telegram"] });
    expect(await sentTexts(bob.chatId!)).toEqual(["⏰ Reminder: Bob's secret appointment"]);
    expect(await sentTexts(alice.chatId!)).toEqual([]);
  });

  it("rejects bad event data without retrying, before any step", async () => {
    const person = await newPerson({ telegram: true });
    const { error, ctx } = await runOnce(
      testWorkflows().functions.reminderDeliver,
      { name: "schedule/reminder.created", data: { userId: person.id, eventId: crypto.randomUUID(), at: "tomorrow at nine" } },
      { steps: elapsed() },
    );
    expect(error?.name).toBe("EventValidationError");
    expect(error?.message).toMatch(/at/);
    expect(stepsRun(ctx)).toEqual([]);
    expect(await sentTexts(person.chatId!)).toEqual([]);
  });

  it("traces the run in Langfuse, tagged workflow + reminder-deliver, with the person and a span per step", async () => {
    const person = await newPerson({ telegram: true });
    const { eventId, at } = await scheduleReminder(person.id, "take the bins out");
    const { deps, functions } = testWorkflows();
    const { result, ctx } = await runOnce(functions.reminderDeliver, reminderEvent(person.id, eventId, at), { steps: elapsed() });
    expect(result).toEqual({ delivered: true, channels: ["telegram"] });
    // @inngest/test does not go through the serve handler, so the middleware's per-request flush may
    // not run: flush the tracer of this deps the way the handler would.
    await deps.tracer.flush();

    // @inngest/test gives every request of the run (one per step, then the end) its own run id, so the
    // run's requests are found by person and tags rather than by ctx.runId alone.
    const events = await langfuseEvents();
    const traces = events.filter((e) => e.type === "trace-create" && e.body.userId === person.id);
    expect(traces.length).toBeGreaterThan(0);
    for (const trace of traces)
      expect(trace.body).toMatchObject({ name: "reminder-deliver", tags: ["workflow", "reminder-deliver"], input: { eventId } });
    const ids = new Set(traces.map((t) => t.body.id));
    expect(ids.has(ctx.runId)).toBe(true);
    const updates = events.filter((e) => e.type === "trace-create" && ids.has(e.body.id) && e.body.output !== undefined);
    expect(updates.map((u) => u.body.output)).toContainEqual({ delivered: true, channels: ["telegram"] });
    const spans = events.filter((e) => e.type === "span-create" && ids.has(e.body.traceId)).map((e) => e.body.name);
    expect(new Set(spans)).toEqual(new Set(["step:claim", "step:send-telegram", "step:finish"]));
  });
});
