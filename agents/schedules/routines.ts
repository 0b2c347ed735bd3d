// The two built-in schedules: the morning brief (08:00 every day) and the weekly review (Sunday 18:00),
// which a person can move ("brief at 7:15 on weekdays") or turn off, in Settings and by saying so.
//
// How they fire, at any number of people: a person on a default is found by its hourly fan-out
// (morning-brief-cron, weekly-review's cron: one query an hour for the people whose clock shows that
// hour). A person who changed a routine has a row of their own (db/repositories/routines.ts) and their
// own chain of delayed events: each occurrence is one event (brief/requested or review/requested with
// `at`) that sleeps until its time, plans the next occurrence before it composes anything, and hands it
// over; the fan-out skips them. Moving a routine plans a new occurrence and moves the row's `next`: an
// older occurrence still asleep wakes, finds `next` moved, and sends nothing (cancelled by the row, not
// by Inngest). Set back to its default, the row goes and the fan-out finds the person again.
// Times are the person's wall clock through recurrence.ts (its daylight-saving rule applies); one
// brief per local date and one review per ISO week, whichever path asked (the claimed delivery).
import { z } from "zod";
import type { Database, Tx } from "../../db/database";
import { profileOf } from "../../db/repositories/people";
import { advanceRoutine, dropRoutine, routineOf, saveRoutine, type RoutineName, type Weekday } from "../../db/repositories/routines";
import { isoLocal, zoneOrUtc } from "../../platform/local-time";
import { briefRequested, reviewRequested } from "../workflows/events";
import { nextOccurrences } from "./recurrence";

export type { RoutineName, Weekday } from "../../db/repositories/routines";

export const WEEKDAYS: Weekday[] = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"];
const DAY_NAMES: Record<Weekday, string> = {
  MO: "Monday",
  TU: "Tuesday",
  WE: "Wednesday",
  TH: "Thursday",
  FR: "Friday",
  SA: "Saturday",
  SU: "Sunday",
};

export interface RoutineSetting {
  on: boolean;
  /** "07:15", on the person's clock. */
  time: string;
  /** The days it comes, Monday first; the review comes on one. */
  days: Weekday[];
}

export const ROUTINE_DEFAULTS: Record<RoutineName, RoutineSetting> = {
  brief: { on: true, time: "08:00", days: [...WEEKDAYS] },
  review: { on: true, time: "18:00", days: ["SU"] },
};

/** The routine as the person sees it: its setting, in words, and when it next comes (UTC ISO, or null when off). */
export interface RoutineView extends RoutineSetting {
  name: RoutineName;
  /** "every weekday at 07:15". */
  repeats: string;
  next: string | null;
  /** True when it is not the default. */
  custom: boolean;
}

/** A change as the web app and the model's routine_set give it: only what changes. */
export const RoutineChange = z
  .object({
    on: z.boolean().optional().describe("false turns it off, true back on"),
    time: z
      .string()
      .regex(/^([01]\d|2[0-3]):[0-5]\d$/, "a time of day like 07:15")
      .optional()
      .describe("the time of day on the person's clock, 24-hour HH:MM (07:15)"),
    days: z
      .array(z.enum(["MO", "TU", "WE", "TH", "FR", "SA", "SU"]))
      .min(1)
      .max(7)
      .optional()
      .describe("the days it comes (MO…SU): all seven for every day, MO–FR for weekdays; the review comes on one"),
  })
  .strict();
export type RoutineChange = z.infer<typeof RoutineChange>;

/** Why a change cannot be kept, or null. */
function routineProblem(name: RoutineName, setting: RoutineSetting): string | null {
  if (!/^([01]\d|2[0-3]):[0-5]\d$/.test(setting.time)) return "the time must be a time of day like 07:15";
  if (setting.days.length === 0) return "it needs at least one day";
  if (setting.days.some((d) => !WEEKDAYS.includes(d))) return "days are MO, TU, WE, TH, FR, SA, SU";
  if (name === "review" && setting.days.length !== 1) return "the weekly review comes on one day of the week";
  return null;
}

const ordered = (days: Weekday[]) => WEEKDAYS.filter((d) => days.includes(d));

/** The RRULE of a setting: daily, or weekly on its days, at its time. */
function routineRule(setting: RoutineSetting): string {
  const [hour, minute] = setting.time.split(":").map(Number) as [number, number];
  const days = ordered(setting.days);
  const on = days.length === 7 ? "FREQ=DAILY" : `FREQ=WEEKLY;BYDAY=${days.join(",")}`;
  return `${on};BYHOUR=${hour};BYMINUTE=${minute}`;
}

/** "every day at 08:00", "every weekday at 07:15", "every Sunday at 18:00", "every Monday and Thursday at 09:00". */
function describeRoutine(setting: RoutineSetting): string {
  const days = ordered(setting.days);
  const key = days.join(",");
  const when =
    days.length === 7
      ? "every day"
      : key === "MO,TU,WE,TH,FR"
        ? "every weekday"
        : key === "SA,SU"
          ? "every weekend day"
          : `every ${days
              .map((d) => DAY_NAMES[d])
              .join(", ")
              .replace(/, ([^,]*)$/, " and $1")}`;
  return `${when} at ${setting.time}`;
}

const same = (a: RoutineSetting, b: RoutineSetting) =>
  a.on === b.on && a.time === b.time && ordered(a.days).join() === ordered(b.days).join();

/** The first occurrence of `setting` after `after`, on a clock in `zone`. */
function firstAfter(setting: RoutineSetting, zone: string, after: Date): { rule: string; start: string; next: Date } {
  const rule = routineRule(setting);
  // The rule starts today (its first day is whatever day matches first): only its time of day matters.
  const start = `${isoLocal(after, zone).slice(0, 10)}T${setting.time}`;
  const [next] = nextOccurrences(rule, start, zone, after, 1);
  if (!next) throw new Error(`routine rule ${rule} has no next occurrence`);
  return { rule, start, next };
}

/** The person's routine: theirs if they changed it, else the default. */
export async function routineView(tx: Tx, name: RoutineName, zone: string, now: Date): Promise<RoutineView> {
  const stored = await routineOf(tx, name);
  const setting: RoutineSetting = stored ?? ROUTINE_DEFAULTS[name];
  const next = stored ? (stored.on ? stored.next : null) : firstAfter(setting, zone, now).next.toISOString();
  return {
    name,
    on: setting.on,
    time: setting.time,
    days: ordered(setting.days),
    repeats: describeRoutine(setting),
    next,
    custom: Boolean(stored),
  };
}

/** An occurrence of a person's routine: what its event carries (plain data, so a step can return it). */
export interface RoutineOccurrence {
  userId: string;
  /** Its local date (one brief per date, one review per ISO week). */
  date: string;
  at: string;
}

function occurrence(userId: string, at: Date, zone: string): RoutineOccurrence {
  return { userId, date: isoLocal(at, zone).slice(0, 10), at: at.toISOString() };
}

/** The event an occurrence wakes its function with (id per person and instant: planned twice, it is one event). */
export function routineEvent(name: RoutineName, data: RoutineOccurrence) {
  const id = `${name}-${data.userId}-${data.at}`;
  return name === "brief" ? briefRequested.create(data, { id }) : reviewRequested.create(data, { id });
}

/**
 * Changes a routine: kept as given and its next occurrence planned (returned, for the caller to hand
 * over), or, set back to its default, its row dropped. A change that cannot be kept is returned as
 * `problem`, and nothing changes.
 */
export async function changeRoutine(
  db: Database,
  userId: string,
  name: RoutineName,
  change: RoutineChange,
  now: Date,
): Promise<{ problem: string } | { view: RoutineView; planned: RoutineOccurrence | null }> {
  return db.withUser(userId, async (tx) => {
    const zone = zoneOrUtc((await profileOf(tx))?.timezone);
    const current = (await routineOf(tx, name)) ?? ROUTINE_DEFAULTS[name];
    const setting: RoutineSetting = {
      on: change.on ?? current.on,
      time: change.time ?? current.time,
      days: change.days ? ordered(change.days) : current.days,
    };
    // Naming a new time or day turns it on: "brief at 7:15" means they want one.
    if (change.on === undefined && (change.time || change.days)) setting.on = true;
    const problem = routineProblem(name, setting);
    if (problem) return { problem };
    let planned: RoutineOccurrence | null = null;
    if (same(setting, ROUTINE_DEFAULTS[name])) {
      await dropRoutine(tx, name);
    } else {
      const { rule, start, next } = firstAfter(setting, zone, now);
      await saveRoutine(tx, userId, { name, ...setting, rule, start, next });
      if (setting.on) planned = occurrence(userId, next, zone);
    }
    return { view: await routineView(tx, name, zone, now), planned };
  });
}

/**
 * The occurrence at `at` has come: whether it still stands (the routine is on and `at` is still its next),
 * and if so the one after it, planned. Null when it was moved, turned off or set back to its default since.
 */
export async function planAfter(db: Database, userId: string, name: RoutineName, at: Date): Promise<RoutineOccurrence | null> {
  return db.withUser(userId, async (tx) => {
    const routine = await routineOf(tx, name);
    if (!routine?.on) return null;
    const zone = zoneOrUtc((await profileOf(tx))?.timezone);
    const [next] = nextOccurrences(routine.rule, routine.start, zone, at, 1);
    if (!next || !(await advanceRoutine(tx, name, at, next))) return null;
    return occurrence(userId, next, zone);
  });
}
