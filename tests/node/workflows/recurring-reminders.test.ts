// Guards issue 27's repeating reminders: the recurrence (agents/schedules/recurrence.ts) keeps the
// person's wall-clock time across the changes of the clocks in Europe/Berlin and America/New_York, reads
// a skipped and a repeated time one documented way, and refuses what Soma does not keep; schedule_create
// with `repeat` keeps a schedule and hands over its first occurrence (once per message); delivering an
// occurrence plans the next and hands it over as a new event (reminder-deliver, the real function); a
// paused schedule sends nothing and plans nothing, and resuming plans the next again; 50 active at most.
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { localEmbedder } from "../../../agents/integrations/model/embeddings";
import { planNextOccurrence } from "../../../agents/schedules/plan";
import { describeRule, MAX_SCHEDULES, nextOccurrences, parseRule } from "../../../agents/schedules/recurrence";
import { turnTools } from "../../../agents/turn/tools/index";
import { cancelPendingOccurrence, listSchedules, updateSchedule } from "../../../db/repositories/schedules";
import { newPerson, runOnce, testDb, testWorkflows } from "./harness";

const iso = (dates: Date[]) => dates.map((d) => d.toISOString());

describe("the recurrence of a repeating reminder", () => {
  it("keeps the person's time of day across the changes of the clocks", () => {
    // Berlin moves to summer time on 29 March 2026 and back on 25 October 2026.
    expect(iso(nextOccurrences("FREQ=WEEKLY;BYDAY=MO", "2026-03-16T09:00", "Europe/Berlin", new Date("2026-03-20T00:00Z"), 2))).toEqual([
      "2026-03-23T08:00:00.000Z",
      "2026-03-30T07:00:00.000Z",
    ]);
    expect(iso(nextOccurrences("FREQ=WEEKLY;BYDAY=MO", "2026-03-16T09:00", "Europe/Berlin", new Date("2026-10-20T00:00Z"), 2))).toEqual([
      "2026-10-26T08:00:00.000Z",
      "2026-11-02T08:00:00.000Z",
    ]);
    // New York: 8 March 2026 (02:00 → 03:00) and 1 November 2026 (02:00 → 01:00).
    expect(iso(nextOccurrences("FREQ=DAILY", "2026-03-01T08:30", "America/New_York", new Date("2026-03-07T00:00Z"), 3))).toEqual([
      "2026-03-07T13:30:00.000Z",
      "2026-03-08T12:30:00.000Z",
      "2026-03-09T12:30:00.000Z",
    ]);
    // A time the clocks skip is that long after the jump; a time that happens twice is the first.
    expect(iso(nextOccurrences("FREQ=DAILY", "2026-03-01T02:30", "America/New_York", new Date("2026-03-08T00:00Z"), 1))).toEqual([
      "2026-03-08T07:30:00.000Z", // 03:30 EDT
    ]);
    expect(iso(nextOccurrences("FREQ=DAILY", "2026-10-01T01:30", "America/New_York", new Date("2026-11-01T00:00Z"), 2))).toEqual([
      "2026-11-01T05:30:00.000Z", // 01:30 EDT, the first of the two
      "2026-11-02T06:30:00.000Z",
    ]);
  });

  it("reads the everyday repeats and says them in words, and refuses what it does not keep", () => {
    const after = new Date("2026-11-26T12:00Z");
    expect(iso(nextOccurrences("FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8;BYMINUTE=30", "2026-11-26T08:30", "UTC", after, 3))).toEqual([
      "2026-11-27T08:30:00.000Z",
      "2026-11-30T08:30:00.000Z",
      "2026-12-01T08:30:00.000Z",
    ]);
    expect(iso(nextOccurrences("FREQ=MONTHLY;BYMONTHDAY=1", "2026-12-01T09:00", "UTC", after, 2))).toEqual([
      "2026-12-01T09:00:00.000Z",
      "2027-01-01T09:00:00.000Z",
    ]);
    expect(iso(nextOccurrences("FREQ=WEEKLY;INTERVAL=2;BYDAY=FR", "2026-11-27T18:00", "UTC", after, 2))).toEqual([
      "2026-11-27T18:00:00.000Z",
      "2026-12-11T18:00:00.000Z",
    ]);
    expect(nextOccurrences("FREQ=DAILY;COUNT=2", "2026-11-27T09:00", "UTC", new Date("2026-11-28T10:00Z"), 3)).toEqual([]);
    expect(describeRule("FREQ=WEEKLY;BYDAY=MO", "2026-11-30T09:00")).toBe("every week on Monday at 09:00");
    expect(describeRule("FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8;BYMINUTE=30", "2026-11-27T08:30")).toBe("every weekday at 08:30");
    expect(describeRule("FREQ=MONTHLY;BYMONTHDAY=1", "2026-12-01T09:00")).toBe("every month on the 1st at 09:00");
    for (const [rule, why] of [
      ["FREQ=MINUTELY", /nothing more often than hourly/],
      ["FREQ=DAILY;BYMINUTE=0,30", /one BYMINUTE/],
      ["FREQ=DAILY;BYSECOND=5", /BYSECOND is not/],
      ["FREQ=WEEKLY;BYDAY=XX", /BYDAY/],
      ["not a rule", /not a part|FREQ/],
    ] as const) {
      const parsed = parseRule(rule);
      expect(parsed.ok, rule).toBe(false);
      if (!parsed.ok) expect(parsed.error, rule).toMatch(why);
    }
  });
});

/** Calls schedule_create as the AI SDK loop does, for `userId`'s message `externalId`. */
async function scheduleCreate(userId: string, externalId: string, input: Record<string, unknown>, handed: string[] = []) {
  const tools = turnTools({
    db: testDb(),
    userId,
    embedder: localEmbedder,
    source: { kind: "web", externalId, payload: { text: "remind me every Monday at 9 to water the plants" } },
    timezone: "Europe/Berlin",
    scheduleReminder: async ({ eventId }) => {
      handed.push(eventId);
      return true;
    },
  });
  const execute = tools.schedule_create!.execute as (input: unknown, options: unknown) => Promise<Record<string, unknown>>;
  return execute(input, { toolCallId: "t", messages: [{ role: "user", content: "remind me every Monday at 9 to water the plants" }] });
}

async function occurrences(userId: string) {
  return (await testDb().withUser(userId, (tx) =>
    tx.execute(
      sql`select id, status, occurred_at, payload->>'scheduleId' as schedule from events where kind = 'reminder' order by occurred_at`,
    ),
  )) as unknown as Array<{ id: string; status: string; occurred_at: string | Date; schedule: string | null }>;
}

describe("repeating reminders", () => {
  it("keeps a schedule and its first occurrence, once per message, and plans the next one when it is delivered", async () => {
    const person = await newPerson({ timezone: "Europe/Berlin" });
    const handed: string[] = [];
    const made = await scheduleCreate(
      person.id,
      "m1",
      { text: "water the plants", at: "2026-11-30T09:00", repeat: "FREQ=WEEKLY;BYDAY=MO" },
      handed,
    );
    expect(made).toMatchObject({ repeats: "every week on Monday at 09:00" });
    const again = await scheduleCreate(
      person.id,
      "m1",
      { text: "water the plants", at: "2026-11-30T09:00", repeat: "FREQ=WEEKLY;BYDAY=MO" },
      handed,
    );
    expect(again.scheduleId).toBe(made.scheduleId);
    const [first, ...others] = await occurrences(person.id);
    expect(others).toEqual([]);
    expect(first).toMatchObject({ status: "scheduled", schedule: made.scheduleId });
    expect(new Set(handed)).toEqual(new Set([first!.id]));
    const firstAt = new Date(first!.occurred_at);
    expect(firstAt.getUTCDay()).toBe(1);

    // Delivered (no channel: undeliverable, but the schedule goes on): the next Monday is planned and handed over.
    const fn = testWorkflows().functions.reminderDeliver;
    const event = {
      name: "schedule/reminder.created",
      id: `reminder-${first!.id}`,
      data: { userId: person.id, eventId: first!.id, at: firstAt.toISOString() },
    } as const;
    // The hand-over is a step.sendEvent: its payload is what Inngest would receive (the engine sends nothing).
    const run = await runOnce(fn, event, {
      steps: [
        { id: "wait-until-due", handler: () => null },
        { id: "hand-over-next", handler: () => ({ ids: [] }) },
      ],
    });
    expect(run.error).toBeUndefined();
    const rows = await occurrences(person.id);
    expect(rows.map((r) => r.status)).toEqual(["undeliverable", "scheduled"]);
    const nextAt = new Date(rows[1]!.occurred_at);
    expect(nextAt.getTime() - firstAt.getTime()).toBe(7 * 86_400_000);
    const sent = (run.ctx.step.sendEvent as unknown as { mock: { calls: Array<[string, { id: string; data: { eventId: string } }]> } }).mock
      .calls;
    expect(sent.map(([id, payload]) => [id, payload.id, payload.data.eventId])).toEqual([
      ["hand-over-next", `reminder-${rows[1]!.id}`, rows[1]!.id],
    ]);
  });

  it("sends nothing while paused, and plans the next occurrence again when resumed", async () => {
    const person = await newPerson({ timezone: "Europe/Berlin" });
    const made = await scheduleCreate(person.id, "m2", { text: "stretch", at: "2026-11-27T08:30", repeat: "FREQ=DAILY" });
    const scheduleId = String(made.scheduleId);
    const [waiting] = await occurrences(person.id);
    await testDb().withUser(person.id, async (tx) => {
      await cancelPendingOccurrence(tx, scheduleId);
      await updateSchedule(tx, scheduleId, { status: "paused" });
    });
    // The time that was waiting is gone; its delivery, when it wakes, finds nothing to send or plan.
    expect(await occurrences(person.id)).toEqual([]);
    const fn = testWorkflows().functions.reminderDeliver;
    const run = await runOnce(
      fn,
      {
        name: "schedule/reminder.created",
        id: `reminder-${waiting!.id}`,
        data: { userId: person.id, eventId: waiting!.id, at: new Date(waiting!.occurred_at).toISOString() },
      },
      { steps: [{ id: "wait-until-due", handler: () => null }] },
    );
    expect(run.result).toEqual({ delivered: false, reason: "not scheduled (already delivered or removed)" });
    expect(await occurrences(person.id)).toEqual([]);
    // Nothing is planned for a paused schedule; resumed, the next one is.
    expect(
      await testDb().withUser(person.id, (tx) => planNextOccurrence(tx, person.id, scheduleId, new Date(), "Europe/Berlin")),
    ).toBeNull();
    const resumed = await testDb().withUser(person.id, async (tx) => {
      await updateSchedule(tx, scheduleId, { status: "active" });
      return planNextOccurrence(tx, person.id, scheduleId, new Date(), "Europe/Berlin");
    });
    // The time the pause took away is the next one still: it waits again.
    expect(resumed?.at).toBe(new Date(waiting!.occurred_at).toISOString());
    expect((await occurrences(person.id)).map((r) => r.status)).toEqual(["scheduled"]);
  });

  it(`keeps at most ${MAX_SCHEDULES} active, refusing the next with a clear reason`, async () => {
    const person = await newPerson();
    for (let i = 0; i < MAX_SCHEDULES; i++) {
      expect(
        await scheduleCreate(person.id, `cap-${i}`, { text: `habit ${i}`, at: "2026-11-27T08:00", repeat: "FREQ=DAILY" }),
      ).toHaveProperty("scheduleId");
    }
    const refused = await scheduleCreate(person.id, "cap-over", { text: "one more", at: "2026-11-27T08:00", repeat: "FREQ=DAILY" });
    expect(refused.error).toMatch(/You already have 50 repeating reminders/);
    const bad = await scheduleCreate(person.id, "bad", { text: "spam", at: "2026-11-27T08:00", repeat: "FREQ=MINUTELY" });
    expect(bad.error).toMatch(/nothing more often than hourly/);
    expect(await testDb().withUser(person.id, listSchedules)).toHaveLength(MAX_SCHEDULES);
  });
});
