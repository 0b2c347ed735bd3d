// The morning brief with @inngest/test: morning-brief-cron (the hourly fan-out) and brief-generate (one
// person's brief), on the test Postgres and the Bot API stand-in. Weekly review: weekly-review.test.ts.
//
// Postgres and the stand-ins are shared with test files running in parallel, so these tests only ever
// assert about their own people.
import { InngestTestEngine } from "@inngest/test";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { createWorkflows } from "../../../agents/workflows";
import { deletePerson } from "../../../db/repositories/auth";
import { createReminder } from "../../../db/repositories/reminders";
import { capture, claims, cronTick, DAY, email, HOUR, type Spy, stepsRun } from "./digest-fixtures";
import { keptWords, newPerson, runOnce, sentTexts, standInUrl, testConfig, testDb, testWorkflows } from "./harness";

type SentEvent = { name: string; id: string; data: { userId: string; date: string } };

// ---------------------------------------------------------------------------------------------------
// morning-brief-cron
// ---------------------------------------------------------------------------------------------------

/** step.sendEvent mocked (fresh arrays per run: @inngest/test appends each run's step results to them). */
const sendEventsMocked = () => [0, 1, 2, 3].map((i) => ({ id: `request-briefs-${i}`, handler: () => ({ ids: [] }) }));

async function fanOutAt(now: Date) {
  const { result, error, ctx } = await runOnce(testWorkflows({ now }).functions.morningBriefCron, cronTick("TZ=UTC 0 * * * *"), {
    steps: sendEventsMocked(),
  });
  expect(error).toBeUndefined();
  const calls = (ctx.step.sendEvent as unknown as Spy).mock.calls as Array<[string, SentEvent[]]>;
  // The payloads as they go out (eventType(...).create adds a validate() and empty optional fields).
  const events = calls.flatMap(([, batch]) => batch.map(({ name, id, data }) => ({ name, id, data })));
  return { result: result as { requested: number }, calls, events };
}

describe("morning-brief-cron", () => {
  it("asks for the brief of exactly the people for whom it is 08:xx, with their local date", async () => {
    const berlin = await newPerson({ telegram: true, timezone: "Europe/Berlin" }); // 08:00 at 07:00Z in November
    const utc = await newPerson({ telegram: true, timezone: "UTC" }); // 07:00
    const newYork = await newPerson({ telegram: true, timezone: "America/New_York" }); // 02:00
    const berlinNoChat = await newPerson({ timezone: "Europe/Berlin" }); // 08:00, but nowhere to send it
    const { result, calls, events } = await fanOutAt(new Date("2026-11-21T07:00:00Z"));

    expect(calls.length).toBeGreaterThan(0);
    expect(calls[0]![0]).toBe("request-briefs-0");
    const mine = events.filter((e) => [berlin.id, utc.id, newYork.id, berlinNoChat.id].includes(e.data.userId));
    expect(mine).toEqual([
      { name: "brief/requested", id: `brief-${berlin.id}-2026-11-21`, data: { userId: berlin.id, date: "2026-11-21" } },
    ]);
    // Everyone requested is someone at 08:xx right now (other files' people included), each once.
    expect(result.requested).toBe(events.length);
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
  });

  it("uses the person's local date, and finds half-hour zones at the hour their clock shows 08:30", async () => {
    const kiritimati = await newPerson({ telegram: true, timezone: "Pacific/Kiritimati" }); // UTC+14
    const kolkata = await newPerson({ telegram: true, timezone: "Asia/Kolkata" }); // UTC+5:30
    const berlin = await newPerson({ telegram: true, timezone: "Europe/Berlin" });

    // 18:00Z on the 20th is 08:00 on the 21st in Kiritimati.
    const evening = await fanOutAt(new Date("2026-11-20T18:00:00Z"));
    expect(evening.events.filter((e) => [kiritimati.id, kolkata.id, berlin.id].includes(e.data.userId))).toEqual([
      { name: "brief/requested", id: `brief-${kiritimati.id}-2026-11-21`, data: { userId: kiritimati.id, date: "2026-11-21" } },
    ]);
    // 03:00Z is 08:30 in Kolkata (02:00Z would be 07:30: the hourly cron never hits 08:00 there).
    const early = await fanOutAt(new Date("2026-11-21T03:00:00Z"));
    expect(early.events.filter((e) => [kiritimati.id, kolkata.id, berlin.id].includes(e.data.userId))).toEqual([
      { name: "brief/requested", id: `brief-${kolkata.id}-2026-11-21`, data: { userId: kolkata.id, date: "2026-11-21" } },
    ]);
    // Summer time: Berlin is UTC+2 in July, so 06:00Z is its 08:00.
    const summer = await fanOutAt(new Date("2026-07-01T06:00:00Z"));
    expect(summer.events.filter((e) => e.data.userId === berlin.id)).toEqual([
      { name: "brief/requested", id: `brief-${berlin.id}-2026-07-01`, data: { userId: berlin.id, date: "2026-07-01" } },
    ]);
  });

  it("skips a person whose stored timezone Postgres does not know, instead of failing everyone's fan-out", async () => {
    // users.timezone is free text (no check constraint): an unknown zone can be stored.
    const mars = await newPerson({ telegram: true, timezone: "Mars/Olympus_Mons" });
    const stored = (await testDb().withUser(mars.id, (tx) => tx.execute(sql`select timezone from users`))) as unknown as Array<{
      timezone: string;
    }>;
    expect(stored).toEqual([{ timezone: "Mars/Olympus_Mons" }]);
    const berlin = await newPerson({ telegram: true, timezone: "Europe/Berlin" });

    const { events } = await fanOutAt(new Date("2026-11-21T07:00:00Z"));
    expect(events.map((e) => e.data.userId)).toContain(berlin.id);
    expect(events.map((e) => e.data.userId)).not.toContain(mars.id);
  });

  it("gives a repeated fan-out the same event ids, so Inngest keeps one request per person and date", async () => {
    const berlin = await newPerson({ telegram: true, timezone: "Europe/Berlin" });
    // The real step.sendEvent, to the Inngest stand-in (which drops a repeated id like Inngest does).
    const { deps } = testWorkflows({ now: new Date("2026-11-21T07:00:00Z") });
    const { functions } = createWorkflows({
      ...deps,
      config: { ...testConfig, INNGEST_EVENT_KEY: "briefs-test-event-key", INNGEST_BASE_URL: standInUrl },
    });
    for (let run = 0; run < 2; run++) {
      const { error } = await runOnce(functions.morningBriefCron, cronTick("TZ=UTC 0 * * * *"));
      expect(error).toBeUndefined();
    }
    const received = (await (await fetch(`${standInUrl}/__inngest/events?name=brief/requested`)).json()) as Array<
      SentEvent & { deliveries: number; eventKey: string }
    >;
    const mine = received.filter((e) => e.data.userId === berlin.id);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({
      id: `brief-${berlin.id}-2026-11-21`,
      data: { userId: berlin.id, date: "2026-11-21" },
      deliveries: 2,
      eventKey: "briefs-test-event-key",
    });
  });
});

// ---------------------------------------------------------------------------------------------------
// brief-generate
// ---------------------------------------------------------------------------------------------------

function briefRequest(userId: string, date: string) {
  return { name: "brief/requested", id: `brief-${userId}-${date}`, data: { userId, date } } as const;
}

/** A time 12 hours from now (whole minutes), and how a clock in Kolkata (UTC+5:30, no summer time) shows it. */
function halfADayAhead(): { at: Date; kolkata: string } {
  const at = new Date(Math.floor((Date.now() + 12 * HOUR) / 60_000) * 60_000);
  return { at, kolkata: new Date(at.getTime() + 5.5 * HOUR).toISOString().slice(11, 16) };
}

describe("brief-generate", () => {
  it("sends the day's brief — what is coming up and what was on the person's mind — once per date", async () => {
    const person = await newPerson({ telegram: true, timezone: "Asia/Kolkata" });
    const { at, kolkata } = halfADayAhead();
    await testDb().withUser(person.id, (tx) => createReminder(tx, person.id, { text: "Dentist appointment", at, sourceId: null }));
    // Not coming up: a reminder beyond the next 24 hours, and one already delivered.
    await testDb().withUser(person.id, async (tx) => {
      await createReminder(tx, person.id, { text: "Next week's call", at: new Date(Date.now() + 3 * DAY), sourceId: null });
      const sent = await createReminder(tx, person.id, { text: "Already sent", at: new Date(Date.now() + HOUR), sourceId: null });
      await tx.execute(sql`update events set status = 'delivered' where id = ${sent}`);
    });
    await capture(person.id, "book", "Project Hail Mary");
    const date = "2026-11-22";
    const { briefGenerate } = testWorkflows().functions;

    const first = await runOnce(briefGenerate, briefRequest(person.id, date));
    const expected = [
      "Good morning, Wf! Here's your day.",
      "",
      "Coming up:",
      `• ${kolkata} Dentist appointment`,
      "",
      "On your mind yesterday: Project Hail Mary (book).",
    ].join("\n");
    expect(first.error).toBeUndefined();
    expect(first.result).toEqual({ sent: true });
    expect(stepsRun(first.ctx)).toEqual(["compose", "send"]);
    expect(await sentTexts(person.chatId!)).toEqual([expected]);
    // What Inngest keeps of the run (its result, each step's output) has no word of the brief.
    expect(await keptWords(first, /Dentist|Hail Mary|Good morning|Wf/)).toEqual([]);

    // Requested again for the same date (a retried fan-out, a duplicate event): nothing more.
    const again = await runOnce(briefGenerate, briefRequest(person.id, date));
    expect(again.result).toEqual({ sent: false });
    expect(stepsRun(again.ctx)).toEqual(["compose"]);
    expect(await sentTexts(person.chatId!)).toEqual([expected]);
    expect(await claims(person.id, "brief")).toEqual([{ external_id: date, payload: { text: expected } }]);

    // The next day's request is another brief.
    const nextDay = await runOnce(briefGenerate, briefRequest(person.id, "2026-11-23"));
    expect(nextDay.result).toMatchObject({ sent: true });
    expect(await sentTexts(person.chatId!)).toHaveLength(2);
  });

  it("counts the mail since yesterday without listing every sender as something on the person's mind", async () => {
    const person = await newPerson({ telegram: true });
    await email(person.id, { name: "Weekly Digest", email: "digest@news.example" }, "Your digest");
    await email(person.id, { name: null, email: "billing@shop.example" }, "Your invoice");
    await email(person.id, { name: null, email: "old@shop.example" }, "Last week", new Date(Date.now() - 3 * DAY));

    const { result } = await runOnce(testWorkflows().functions.briefGenerate, briefRequest(person.id, "2026-11-22"));
    const expected = "Good morning, Wf! Here's your day.\n\n2 new emails since yesterday.";
    expect(result).toEqual({ sent: true });
    expect(await sentTexts(person.chatId!)).toEqual([expected]);
  });

  it("sends nothing (and claims nothing) when there is nothing to say; a later request that day still can", async () => {
    const person = await newPerson({ telegram: true });
    // Only an archived memory: no longer part of what the brief tells.
    const old = await capture(person.id, "book", "An Old Book");
    await testDb().withUser(person.id, (tx) => tx.execute(sql`update entities set status = 'archived' where id = ${old}`));
    const { briefGenerate } = testWorkflows().functions;

    const empty = await runOnce(briefGenerate, briefRequest(person.id, "2026-11-22"));
    expect(empty.result).toEqual({ sent: false });
    expect(stepsRun(empty.ctx)).toEqual(["compose"]);
    expect(await sentTexts(person.chatId!)).toEqual([]);
    expect(await claims(person.id, "brief")).toEqual([]);

    await capture(person.id, "place", "Lisbon");
    const later = await runOnce(briefGenerate, briefRequest(person.id, "2026-11-22"));
    expect(later.result).toEqual({ sent: true });
    expect(await sentTexts(person.chatId!)).toEqual(["Good morning, Wf! Here's your day.\n\nOn your mind yesterday: Lisbon (place)."]);
  });

  it("sends nothing to a person without Telegram, and claims nothing", async () => {
    const person = await newPerson();
    await capture(person.id, "book", "Project Hail Mary");
    await testDb().withUser(person.id, (tx) =>
      createReminder(tx, person.id, { text: "Dentist", at: new Date(Date.now() + 2 * HOUR), sourceId: null }),
    );
    const { result, ctx } = await runOnce(testWorkflows().functions.briefGenerate, briefRequest(person.id, "2026-11-22"));
    expect(result).toEqual({ sent: false });
    expect(stepsRun(ctx)).toEqual(["compose"]);
    expect(await claims(person.id, "brief")).toEqual([]);
  });

  it("never shows one person another person's reminders or memories", async () => {
    const alice = await newPerson({ telegram: true });
    const bob = await newPerson({ telegram: true });
    await capture(bob.id, "book", "Bob's Private Diary");
    await testDb().withUser(bob.id, (tx) =>
      createReminder(tx, bob.id, { text: "Bob's appointment", at: new Date(Date.now() + 2 * HOUR), sourceId: null }),
    );
    await capture(alice.id, "book", "Middlemarch");

    const { result } = await runOnce(testWorkflows().functions.briefGenerate, briefRequest(alice.id, "2026-11-22"));
    expect(result).toEqual({ sent: true });
    expect(await sentTexts(alice.chatId!)).toEqual(["Good morning, Wf! Here's your day.\n\nOn your mind yesterday: Middlemarch (book)."]);
    expect(await sentTexts(bob.chatId!)).toEqual([]);
  });

  it("sends what the claim holds, read back under the person's own transaction: nothing once the person is deleted", async () => {
    const person = await newPerson({ telegram: true });
    await capture(person.id, "book", "Middlemarch");
    const { briefGenerate } = testWorkflows().functions;
    // The brief was composed and claimed, then the account was deleted before the send step ran.
    const composed = await new InngestTestEngine({ function: briefGenerate }).executeStep("compose", {
      events: [briefRequest(person.id, "2026-11-22")],
    });
    expect(composed.result).toEqual({ claimed: true });
    await deletePerson(testDb(), person.id);
    const { result, error } = await runOnce(briefGenerate, briefRequest(person.id, "2026-11-22"), {
      steps: [{ id: "compose", handler: () => ({ claimed: true }) }],
    });
    expect(error).toBeUndefined();
    expect(result).toEqual({ sent: false });
    expect(await sentTexts(person.chatId!)).toEqual([]);
  });
});
