// The offline model's reminders: "remind me to call Ana tomorrow at 9" → what ("call Ana") and when, on
// the person's clock. It reads the common time expressions and nothing more:
//   in 20 minutes · in an hour · in 2 days             (from now)
//   today · tonight · tomorrow · on Friday · next Monday  (a day; a weekday is the coming one, never today)
//   at 9 · at 9:30 · at 18:30 · at 6pm · at noon · 7am    (a time; at 1–7 without am/pm is the afternoon)
//   morning 09:00 · afternoon 15:00 · evening 19:00 · tonight 20:00
//   every Monday · every other Friday · every weekday · every weekend · every day · the 1st of every month
// A day without a time is at 09:00; a time without a day is the next time the clock shows it.
import { isoLocal, localToInstant } from "../../../platform/local-time";

interface ReminderWhen {
  /** schedule_create's `at`: the person's local date and time, or an instant (Z) for "in 20 minutes". */
  at: string;
  instant: Date;
  /** The time as said back: "tomorrow at 09:00", "in 20 minutes", "on Friday at 09:00". */
  words: string;
}

export interface ReminderRequest {
  what: string;
  when: ReminderWhen | null;
  /** A repeating one: schedule_create's `repeat` (an RRULE) and how it is said back ("every Monday"). */
  repeat?: { rule: string; words: string };
}

export const BYDAY: Record<string, string> = {
  sunday: "SU",
  monday: "MO",
  tuesday: "TU",
  wednesday: "WE",
  thursday: "TH",
  friday: "FR",
  saturday: "SA",
};

const WEEKDAYS = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];
const AMOUNTS: Record<string, number> = {
  a: 1,
  an: 1,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  ten: 10,
  fifteen: 15,
  twenty: 20,
  thirty: 30,
};
const UNITS: Record<string, number> = { min: 60_000, minute: 60_000, hour: 3_600_000, hr: 3_600_000, day: 86_400_000, week: 604_800_000 };
const PARTS: Record<string, number> = { morning: 9, afternoon: 15, evening: 19, night: 20, tonight: 20 };

/** A reminder asked for in `text` ("remind me …"), read at `now` on a clock in `zone`; null when it is not one. */
export function parseReminder(text: string, now: Date, zone: string): ReminderRequest | null {
  const asked = /^(?:please\s+|can you\s+|could you\s+)*remind me\b(.*)$/i.exec(text.trim().replace(/\s+/g, " "));
  if (!asked) return null;
  let rest = ` ${asked[1]} `;
  const take = (pattern: RegExp) => {
    const found = pattern.exec(rest);
    if (found) rest = rest.replace(found[0], " ");
    return found;
  };
  const repeat = repeatOf(take);
  const relative = repeat
    ? null
    : take(/\s(?:in|within)\s+(\d{1,4}|an?|one|two|three|four|five|ten|fifteen|twenty|thirty)\s+(min|minute|hour|hr|day|week)s?\b/i);
  const day = take(/\s(today|tonight|tomorrow|(?:(on|next|this)\s+)?(sunday|monday|tuesday|wednesday|thursday|friday|saturday))\b/i);
  const part = take(/\s(?:in the\s+|this\s+|at\s+)?(morning|afternoon|evening|night)\b/i);
  const clock =
    take(/\sat\s+(noon|midday|midnight)\b/i) ??
    take(/\sat\s+(\d{1,2})(?:[:.h](\d{2}))?\s*([ap]\.?m\.?)?(?=[\s,.!?])/i) ??
    take(/\s(\d{1,2})(?::(\d{2}))?\s*([ap]\.?m\.?)(?=[\s,.!?])/i);
  const what = rest
    .trim()
    .replace(/^(?:to|that|about)\s+/i, "")
    .replace(/\s+(?:to)$/i, "")
    .replace(/[\s.!?,;]+$/, "")
    .trim();

  if (relative) {
    const amount = AMOUNTS[relative[1]!.toLowerCase()] ?? Number(relative[1]);
    const unit = relative[2]!.toLowerCase();
    const instant = new Date(now.getTime() + amount * (UNITS[unit] ?? 60_000));
    const name = unit === "min" ? "minute" : unit === "hr" ? "hour" : unit;
    return { what, when: { at: instant.toISOString(), instant, words: `in ${amount} ${name}${amount === 1 ? "" : "s"}` } };
  }
  if (!day && !part && !clock && !repeat) return { what, when: null };

  const localNow = isoLocal(now, zone);
  const today = localNow.slice(0, 10);
  const dayWord = day?.[1]?.toLowerCase();
  const partWord = (part?.[1] ?? (dayWord === "tonight" ? "tonight" : undefined))?.toLowerCase();
  let [hour, minute] = clockOf(clock, partWord);
  if (!clock && partWord) [hour, minute] = [PARTS[partWord] ?? 9, 0];

  let date = today;
  let words = "";
  if (dayWord === "tomorrow") [date, words] = [addDays(today, 1), "tomorrow"];
  else if (dayWord === "today" || dayWord === "tonight") words = dayWord;
  else if (day?.[3]) {
    const target = WEEKDAYS.indexOf(day[3].toLowerCase());
    const ahead = (target - weekday(today) + 7) % 7 || 7;
    date = addDays(today, ahead);
    words = `${day[2]?.toLowerCase() === "next" ? "next" : "on"} ${cap(day[3])}`;
  }
  const time = `${pad(hour)}:${pad(minute)}`;
  // A time alone is the next time the clock shows it: today if it is still to come, else tomorrow.
  if (!day && `${date}T${time}` <= localNow) date = addDays(date, 1);
  const at = `${date}T${time}`;
  // A repeating one starts today at that time: schedule_create takes its first occurrence from the rule.
  if (repeat) {
    const start = `${today}T${time}`;
    return { what, when: { at: start, instant: localToInstant(start, zone), words: `${repeat.words} at ${time}` }, repeat };
  }
  return { what, when: { at, instant: localToInstant(at, zone), words: `${words ? `${words} ` : ""}at ${time}` } };
}

/** "every Monday", "every other Friday", "every weekday", "every day", "on the 1st of every month", … */
function repeatOf(take: (pattern: RegExp) => RegExpExecArray | null): { rule: string; words: string } | null {
  const weekday = take(/\s(?:every|each)\s+(other\s+)?(sunday|monday|tuesday|wednesday|thursday|friday|saturday)s?\b/i);
  if (weekday) {
    const name = cap(weekday[2]!);
    return weekday[1]
      ? { rule: `FREQ=WEEKLY;INTERVAL=2;BYDAY=${BYDAY[weekday[2]!.toLowerCase()]}`, words: `every other ${name}` }
      : { rule: `FREQ=WEEKLY;BYDAY=${BYDAY[weekday[2]!.toLowerCase()]}`, words: `every ${name}` };
  }
  if (take(/\s(?:every|each)\s+(?:weekday|working day|workday)s?\b/i))
    return { rule: "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR", words: "every weekday" };
  if (take(/\s(?:every|each)\s+weekend\b/i)) return { rule: "FREQ=WEEKLY;BYDAY=SA,SU", words: "every weekend" };
  const monthly =
    take(/\s(?:on\s+)?the\s+(\d{1,2})(?:st|nd|rd|th)?\s+of\s+(?:every|each)\s+month\b/i) ??
    take(/\s(?:every|each)\s+month\s+on\s+the\s+(\d{1,2})(?:st|nd|rd|th)?\b/i);
  if (monthly && Number(monthly[1]) >= 1 && Number(monthly[1]) <= 31) {
    return { rule: `FREQ=MONTHLY;BYMONTHDAY=${Number(monthly[1])}`, words: `on day ${Number(monthly[1])} of every month` };
  }
  if (take(/\s(?:(?:every|each)\s+day|daily)\b/i)) return { rule: "FREQ=DAILY", words: "every day" };
  return null;
}

/** The hour and minute a clock expression names (09:00 when none does). */
function clockOf(clock: RegExpExecArray | null, part: string | undefined): [number, number] {
  if (!clock) return [9, 0];
  const word = clock[1]!.toLowerCase();
  if (word === "noon" || word === "midday") return [12, 0];
  if (word === "midnight") return [0, 0];
  let hour = Number(word) % 24;
  const minute = Math.min(Number(clock[2] ?? 0), 59);
  const meridiem = clock[3]?.toLowerCase().replace(/\./g, "");
  if (meridiem === "pm" && hour < 12) hour += 12;
  else if (meridiem === "am" && hour === 12) hour = 0;
  // "at 6 in the evening", "at 3" (nobody sets a reminder for 3 at night by saying "at 3").
  else if (!meridiem && hour < 12 && ((part && part !== "morning") || hour < 8)) hour += 12;
  return [hour, minute];
}

function addDays(date: string, days: number): string {
  const [y, m, d] = date.split("-").map(Number) as [number, number, number];
  return new Date(Date.UTC(y, m - 1, d + days)).toISOString().slice(0, 10);
}

function weekday(date: string): number {
  return new Date(`${date}T00:00:00Z`).getUTCDay();
}

const pad = (n: number) => String(n).padStart(2, "0");
const cap = (word: string) => word.charAt(0).toUpperCase() + word.slice(1).toLowerCase();
