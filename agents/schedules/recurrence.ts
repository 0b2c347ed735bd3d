// Recurrence: the one module that knows how a repeating reminder repeats. A schedule keeps an RFC 5545
// RRULE (a subset, checked by parseRule) and the local date and time of its first occurrence; its
// occurrences are computed with `rrule` 2.8.1 on the person's wall clock — as "floating" times, never
// through a UTC offset — and only then made instants in their timezone (platform/local-time.ts). So
// "every Monday at 9" is 09:00 on their clock in winter and in summer, and a change of the clocks
// is read one documented way: a time the clocks skip (02:30 when they jump from 02:00 to 03:00) is that
// long after the jump (03:30); a time that happens twice (when they go back) is the first of the two.
import * as rruleModule from "rrule";
import type { Options } from "rrule";
import { isoLocal, localToInstant } from "../../platform/local-time";

// rrule ships an ES module (what the Worker's bundler and vitest take) and a UMD build without detectable
// named exports (what Node's own loader takes, e.g. under tsx for npm run telegram:register): either way.
// (Reflect.get: the bundler, seeing the ES module, would warn about a `.default` it does not export.)
const rrule: typeof rruleModule = "RRule" in rruleModule ? rruleModule : (Reflect.get(rruleModule, "default") as typeof rruleModule);
const { Frequency, RRule } = rrule;

/** Schedules a person may have active at once. */
export const MAX_SCHEDULES = 50;

const FREQUENCIES: Record<string, Options["freq"]> = {
  HOURLY: Frequency.HOURLY,
  DAILY: Frequency.DAILY,
  WEEKLY: Frequency.WEEKLY,
  MONTHLY: Frequency.MONTHLY,
  YEARLY: Frequency.YEARLY,
};
const DAY = /^([+-]?[1-5])?(MO|TU|WE|TH|FR|SA|SU)$/;
const PARTS = new Set(["FREQ", "INTERVAL", "BYDAY", "BYMONTHDAY", "BYMONTH", "BYHOUR", "BYMINUTE", "COUNT", "UNTIL", "WKST"]);

export type ParsedRule = { ok: true; rule: string; options: Partial<Options> } | { ok: false; error: string };

/** The numbers of a BY… list within min–max (a month day is never 0), or null. */
function ints(value: string, min: number, max: number): number[] | null {
  const list = value.split(",").map(Number);
  return list.every((n) => Number.isInteger(n) && n >= min && n <= max && !(min < 0 && n === 0)) ? list : null;
}

/**
 * `rule` (with or without "RRULE:") as Soma keeps it, or why it is refused: only FREQ HOURLY to YEARLY
 * (nothing more often than hourly), INTERVAL, BYDAY, BYMONTHDAY, BYMONTH, BYHOUR, one BYMINUTE, COUNT,
 * UNTIL and WKST.
 */
export function parseRule(input: string): ParsedRule {
  const rule = input
    .trim()
    .replace(/^RRULE:/i, "")
    .toUpperCase();
  const fields = new Map<string, string>();
  for (const part of rule.split(";").filter(Boolean)) {
    const [key, value] = part.split("=");
    if (!key || !value || !PARTS.has(key)) return { ok: false, error: `${key || part} is not a part of a rule Soma keeps` };
    if (fields.has(key)) return { ok: false, error: `${key} is given twice` };
    fields.set(key, value);
  }
  const freq = FREQUENCIES[fields.get("FREQ") ?? ""];
  if (freq === undefined)
    return { ok: false, error: "FREQ must be HOURLY, DAILY, WEEKLY, MONTHLY or YEARLY (nothing more often than hourly)" };
  const options: Partial<Options> = { freq };
  const interval = fields.get("INTERVAL");
  if (interval !== undefined) {
    const n = Number(interval);
    if (!Number.isInteger(n) || n < 1 || n > 365) return { ok: false, error: "INTERVAL must be 1 to 365" };
    options.interval = n;
  }
  const byday = fields.get("BYDAY");
  if (byday !== undefined) {
    const days = byday.split(",");
    if (!days.every((d) => DAY.test(d)))
      return { ok: false, error: "BYDAY must list MO, TU, WE, TH, FR, SA, SU (with an ordinal for a month: 1MO, -1FR)" };
    options.byweekday = days.map((d) => {
      const [, nth, name] = DAY.exec(d)!;
      const weekday = RRule[name as "MO"];
      return nth ? weekday.nth(Number(nth)) : weekday;
    });
  }
  for (const [key, option, min, max] of [
    ["BYMONTHDAY", "bymonthday", -31, 31],
    ["BYMONTH", "bymonth", 1, 12],
    ["BYHOUR", "byhour", 0, 23],
    ["BYMINUTE", "byminute", 0, 59],
  ] as const) {
    const value = fields.get(key);
    if (value === undefined) continue;
    const list = ints(value, min, max);
    if (!list) return { ok: false, error: `${key} must be numbers from ${min} to ${max}` };
    (options as Record<string, number[]>)[option] = list;
  }
  if ((options.byminute as number[] | undefined)?.length && (options.byminute as number[]).length > 1) {
    return { ok: false, error: "one BYMINUTE at most: nothing repeats more often than hourly" };
  }
  const count = fields.get("COUNT");
  if (count !== undefined) {
    const n = Number(count);
    if (!Number.isInteger(n) || n < 1 || n > 1000) return { ok: false, error: "COUNT must be 1 to 1000" };
    options.count = n;
  }
  const until = fields.get("UNTIL");
  if (until !== undefined) {
    const match = /^(\d{4})(\d{2})(\d{2})(?:T(\d{2})(\d{2})(\d{2})Z?)?$/.exec(until);
    if (!match) return { ok: false, error: "UNTIL must be a date like 20271231 or 20271231T235959Z" };
    const [y, mo, d, h = "23", mi = "59", s = "59"] = match.slice(1);
    options.until = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)));
  }
  return { ok: true, rule, options };
}

/** A local date and time ("2026-11-30T09:00") as rrule's floating Date (its fields read as UTC). */
function floating(local: string): Date {
  const [date, time = "00:00"] = local.split("T") as [string, string?];
  const [y, m, d] = date.split("-").map(Number) as [number, number, number];
  const [h, mi] = time.split(":").map(Number) as [number, number];
  return new Date(Date.UTC(y, m - 1, d, h, mi));
}

const local = (when: Date) => when.toISOString().slice(0, 16);

/**
 * The next `count` occurrences after `after` of the schedule that first occurs at `start` (the person's
 * local date and time), on a clock in `zone`, as instants. Fewer when the rule ends (COUNT, UNTIL).
 */
export function nextOccurrences(rule: string, start: string, zone: string, after: Date, count = 1): Date[] {
  const parsed = parseRule(rule);
  if (!parsed.ok) throw new RangeError(parsed.error);
  const recurrence = new RRule({ ...parsed.options, dtstart: floating(start) });
  const found: Date[] = [];
  // From the local minute before `after`: an occurrence the clocks repeat can fall before it as an instant.
  let cursor = floating(isoLocal(new Date(after.getTime() - 60_000), zone));
  for (let guard = 0; found.length < count && guard < count + 50; guard++) {
    const next = recurrence.after(cursor, false);
    if (!next) break;
    cursor = next;
    const instant = localToInstant(local(next), zone);
    if (instant.getTime() > after.getTime()) found.push(instant);
  }
  return found;
}

/** The rule in words, with its time of day: "every week on Monday at 09:00". */
export function describeRule(rule: string, start: string): string {
  const parsed = parseRule(rule);
  if (!parsed.ok) return rule;
  const { byhour, byminute, ...rest } = parsed.options;
  const words = new RRule({ ...rest, dtstart: floating(start) }).toText();
  const hours = (byhour as number[] | undefined) ?? [Number(start.slice(11, 13))];
  const minute = (byminute as number[] | undefined)?.[0] ?? Number(start.slice(14, 16));
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${words} at ${hours.map((h) => `${pad(h)}:${pad(minute)}`).join(", ")}`;
}
