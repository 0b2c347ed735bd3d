// The morning brief and the weekly review moved or turned off (agents/schedules/routines.ts), with
// @inngest/test on the test Postgres and the Bot API stand-in: a brief moved to 07:15 on weekdays sleeps
// until 07:15 on the person's clock, arrives, and hands over the next weekday's; the 08:00 fan-out leaves
// that person out (and finds them again once it is back to its default); an occurrence planned before the
// person moved it again sends nothing; turned off, nothing is planned; a review moved to Friday 17:00
// arrives then; and a routine keeps its local time across a change of the clocks.
// The engine's sleep is mocked as elapsed (@inngest/test never resolves one), and what the function
// asked to sleep until is asserted.
import { InngestTestEngine } from "@inngest/test";
import { describe, expect, it } from "vitest";
import { changeRoutine, planAfter, routineEvent, type RoutineOccurrence } from "../../../agents/schedules/routines";
import { capture, claims, cronTick, type Spy } from "./digest-fixtures";
import { newPerson, runOnce, sentTexts, testDb, testWorkflows } from "./harness";

const WEEKDAYS = ["MO", "TU", "WE", "TH", "FR"] as const;

/** Elapsed sleep and a recorded hand-over (fresh per run: @inngest/test appends each run's step results). */
const mocked = () => [
  { id: "wait-until-due", handler: () => null },
  { id: "hand-over-next", handler: () => ({ ids: [] }) },
];

const berlinClock = (iso: string) =>
  new Date(iso).toLocaleString("en-GB", { timeZone: "Europe/Berlin", weekday: "long", hour: "2-digit", minute: "2-digit" });

async function planned(userId: string, ...args: Parameters<typeof changeRoutine> extends [unknown, unknown, ...infer R] ? R : never) {
  const changed = await changeRoutine(testDb(), userId, ...args);
  if ("problem" in changed) throw new Error(changed.problem);
  return changed;
}

/** The people the hourly brief fan-out asks for at `now` (its real first step, run alone). */
async function fannedOut(now: Date): Promise<string[]> {
  const { result, error } = await new InngestTestEngine({ function: testWorkflows({ now }).functions.morningBriefCron }).executeStep(
    "people-at-eight",
    { events: [cronTick("TZ=UTC 0 * * * *")] },
  );
  if (error) throw error;
  return (result as Array<{ userId: string }>).map((p) => p.userId);
}

/** What a run handed over as the next occurrence. */
function handedOver(ctx: { step: { sendEvent: unknown } }) {
  const calls = (ctx.step.sendEvent as Spy).mock.calls as Array<[string, { name: string; id: string; data: RoutineOccurrence }]>;
  return calls.filter(([id]) => id === "hand-over-next").map(([, event]) => ({ name: event.name, id: event.id, data: event.data }));
}

describe("the brief and the review, moved", () => {
  it("a brief moved to 07:15 on weekdays arrives then, once, and plans the next weekday's; the 08:00 fan-out leaves the person out", async () => {
    const person = await newPerson({ telegram: true, timezone: "Europe/Berlin" });
    const other = await newPerson({ telegram: true, timezone: "Europe/Berlin" });
    await capture(person.id, "book", "The Left Hand of Darkness");
    const moved = await planned(person.id, "brief", { time: "07:15", days: [...WEEKDAYS] }, new Date());
    expect(moved.view).toMatchObject({ on: true, time: "07:15", days: WEEKDAYS, repeats: "every weekday at 07:15", custom: true });
    const first = moved.planned!;
    expect(berlinClock(first.at)).toMatch(/^(Monday|Tuesday|Wednesday|Thursday|Friday) 07:15$/);
    expect(first.date).toBe(new Date(first.at).toLocaleDateString("en-CA", { timeZone: "Europe/Berlin" }));

    // Monday 23 November 2026, 07:00Z: 08:00 in Berlin. The default person is asked for; the one who moved theirs is not.
    const eight = await fannedOut(new Date("2026-11-23T07:00:00Z"));
    expect(eight).toContain(other.id);
    expect(eight).not.toContain(person.id);

    const { briefGenerate } = testWorkflows().functions;
    const run = await runOnce(briefGenerate, routineEvent("brief", first), { steps: mocked() });
    expect(run.error).toBeUndefined();
    expect(run.result).toEqual({ sent: true });
    expect(run.ctx.step.sleepUntil).toHaveBeenCalledWith("wait-until-due", new Date(first.at));
    const [next] = handedOver(run.ctx);
    expect(next!.name).toBe("brief/requested");
    expect(next!.id).toBe(`brief-${person.id}-${next!.data.at}`);
    expect(berlinClock(next!.data.at)).toMatch(/^(Monday|Tuesday|Wednesday|Thursday|Friday) 07:15$/);
    expect(new Date(next!.data.at).getTime()).toBeGreaterThan(new Date(first.at).getTime());
    const texts = await sentTexts(person.chatId!);
    expect(texts).toHaveLength(1);
    expect(texts[0]).toMatch(/^Good morning, Wf! Here's your day\.\n\nOn your mind yesterday: The Left Hand of Darkness \(book\)\.$/);

    // The same occurrence again (a redelivered event): the same next one is handed over, and nothing is sent twice.
    const again = await runOnce(briefGenerate, routineEvent("brief", first), { steps: mocked() });
    expect(again.result).toEqual({ sent: false });
    expect(handedOver(again.ctx)).toEqual([next]);
    expect(await sentTexts(person.chatId!)).toHaveLength(1);
    expect(await claims(person.id, "brief")).toHaveLength(1);

    // Moved again before the next one came: the occurrence planned before wakes and sends nothing, hands nothing over.
    const earlier = await planned(person.id, "brief", { time: "06:30" }, new Date());
    expect(berlinClock(earlier.planned!.at)).toMatch(/06:30$/);
    const stale = await runOnce(briefGenerate, routineEvent("brief", next!.data), { steps: mocked() });
    expect(stale.result).toMatchObject({ sent: false, reason: expect.stringMatching(/^moved/) });
    expect(handedOver(stale.ctx)).toEqual([]);

    // Turned off: nothing planned, and no fan-out either; the occurrence still asleep sends nothing.
    const off = await planned(person.id, "brief", { on: false }, new Date());
    expect(off.planned).toBeNull();
    expect(off.view).toMatchObject({ on: false, next: null, custom: true });
    expect(await fannedOut(new Date("2026-11-23T07:00:00Z"))).not.toContain(person.id);
    const asleep = await runOnce(briefGenerate, routineEvent("brief", earlier.planned!), { steps: mocked() });
    expect(asleep.result).toMatchObject({ sent: false });
    expect(await sentTexts(person.chatId!)).toHaveLength(1);

    // Back to the default (on, 08:00, every day): the row goes and the fan-out finds the person again.
    const back = await planned(
      person.id,
      "brief",
      { on: true, time: "08:00", days: ["MO", "TU", "WE", "TH", "FR", "SA", "SU"] },
      new Date(),
    );
    expect(back.planned).toBeNull();
    expect(back.view).toMatchObject({ on: true, custom: false, repeats: "every day at 08:00" });
    expect(await fannedOut(new Date("2026-11-23T07:00:00Z"))).toContain(person.id);
  });

  it("a weekly review moved to Friday 17:00 arrives then, and the Sunday run leaves the person out", async () => {
    const person = await newPerson({ telegram: true, timezone: "America/New_York" });
    await capture(person.id, "movie", "Arrival");
    const moved = await planned(person.id, "review", { time: "17:00", days: ["FR"] }, new Date());
    expect(moved.view).toMatchObject({ repeats: "every Friday at 17:00", custom: true });
    const at = moved.planned!.at;
    expect(
      new Date(at).toLocaleString("en-GB", { timeZone: "America/New_York", weekday: "long", hour: "2-digit", minute: "2-digit" }),
    ).toBe("Friday 17:00");

    // Sunday 22 November 2026, 23:00Z: 18:00 in New York. The real "people" step, run alone.
    const sunday = await new InngestTestEngine({
      function: testWorkflows({ now: new Date("2026-11-22T23:00:00Z") }).functions.weeklyReview,
    }).executeStep("people", { events: [cronTick("TZ=UTC 0 * * * 0,1")] });
    expect(sunday.error).toBeUndefined();
    expect((sunday.result as Array<{ userId: string }>).map((p) => p.userId)).not.toContain(person.id);

    const run = await runOnce(testWorkflows().functions.weeklyReview, routineEvent("review", moved.planned!), { steps: mocked() });
    expect(run.error).toBeUndefined();
    expect(run.result).toEqual({ sent: true });
    expect(run.ctx.step.sleepUntil).toHaveBeenCalledWith("wait-until-due", new Date(at));
    const [next] = handedOver(run.ctx);
    expect(next!.name).toBe("review/requested");
    expect(new Date(next!.data.at).getTime() - new Date(at).getTime()).toBe(7 * 86_400_000);
    expect(await sentTexts(person.chatId!)).toEqual([expect.stringMatching(/^Your week in memory:\n• movie: Arrival\n/)]);
  });

  it("refuses what it cannot keep, and keeps 07:15 on the person's clock across a change of the clocks", async () => {
    const person = await newPerson({ telegram: true, timezone: "Europe/Berlin" });
    expect(await changeRoutine(testDb(), person.id, "review", { days: ["FR", "SA"] }, new Date())).toEqual({
      problem: "the weekly review comes on one day of the week",
    });
    // Friday 26 March 2027, noon: the clocks in Berlin go forward on Sunday 28 March.
    const moved = await planned(person.id, "brief", { time: "07:15" }, new Date("2027-03-26T12:00:00Z"));
    const times = [moved.planned!.at];
    for (let i = 0; i < 3; i++) {
      const next = await planAfter(testDb(), person.id, "brief", new Date(times.at(-1)!));
      times.push(next!.at);
    }
    expect(times).toEqual([
      "2027-03-27T06:15:00.000Z", // Saturday 07:15 CET (UTC+1)
      "2027-03-28T05:15:00.000Z", // Sunday 07:15 CEST (UTC+2)
      "2027-03-29T05:15:00.000Z",
      "2027-03-30T05:15:00.000Z",
    ]);
    // An occurrence that is not the routine's next (planned before a move) plans nothing.
    expect(await planAfter(testDb(), person.id, "brief", new Date(times[0]!))).toBeNull();
  });
});
