// The person's time in Telegram: /timezone [zone or city], /reminders, /cancel <n>.
//
// Numbering: /reminders numbers the upcoming reminders soonest first and remembers that list (its ids,
// in a sources row: db/repositories/reminders.ts); /cancel <n> always means the n-th line of the list
// the person saw last, even if a reminder was delivered or added since. A number that list does not
// have, or a reminder on it that is no longer waiting, gets an answer saying so — never another one.
import type { Database } from "../../db/database";
import { personZone, setTimezone } from "../../db/repositories/people";
import {
  cancelReminder,
  LISTED_LIMIT,
  rememberShownList,
  shownList,
  upcomingReminders,
  type ReminderItem,
} from "../../db/repositories/reminders";
import { formatLocal, resolveTimeZone } from "../../platform/local-time";
import { listSchedules } from "../../db/repositories/schedules";
import { describeRule } from "../schedules/recurrence";
import { routineView } from "../schedules/routines";

const TIMEZONE_HOW_TO = "Set it with /timezone <city or zone>, e.g. /timezone Berlin or /timezone America/New_York.";

/** Longest reminder text a list line shows. */
const LINE_TEXT = 120;

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** /timezone: shows the person's timezone; /timezone <zone or city> sets it. */
export async function timezoneCommand(db: Database, userId: string, argument: string, now = new Date()): Promise<string> {
  if (!argument) {
    const zone = await db.withUser(userId, personZone);
    return `Your timezone is ${zone}; it's ${formatLocal(now, zone)} there.\n${TIMEZONE_HOW_TO}`;
  }
  const zone = resolveTimeZone(argument);
  if (!zone) {
    return `I don't know the timezone "${clip(argument, 64)}". Try a city such as Berlin, New York or São Paulo, or a zone name such as Europe/Lisbon.`;
  }
  await setTimezone(db, userId, zone);
  return `Your timezone is now ${zone}; it's ${formatLocal(now, zone)} there. Reminders, the morning brief and the weekly review follow it.`;
}

/** /reminders: the upcoming reminders, numbered for /cancel, in the person's local time. */
export async function remindersCommand(db: Database, userId: string): Promise<string> {
  const now = new Date();
  const { zone, upcoming, schedules, routines } = await db.withUser(userId, async (tx) => {
    const zone = await personZone(tx);
    const upcoming = await upcomingReminders(tx, LISTED_LIMIT + 1);
    const schedules = await listSchedules(tx);
    const routines = [await routineView(tx, "brief", zone, now), await routineView(tx, "review", zone, now)];
    // An empty list is remembered too: a /cancel 2 after it must not reach an older list.
    await rememberShownList(
      tx,
      userId,
      upcoming.slice(0, LISTED_LIMIT).map((r) => r.id),
    );
    return { zone, upcoming, schedules, routines };
  });
  // The brief and the review, which the person can move by saying so (routine_set).
  const [brief, review] = routines.map((r) => (r.on ? r.repeats : "off"));
  const routinePart = ["", `Morning brief: ${brief} · Weekly review: ${review}`];
  // Repeating ones with their rule in words ("every week on Monday at 09:00"), paused ones said so.
  const repeating = schedules.map(
    (r) => `• ${clip(r.text, LINE_TEXT)} — ${describeRule(r.rule, r.start)}${r.status === "paused" ? " (paused)" : ""}`,
  );
  const repeatingPart = repeating.length ? ["", "Repeating:", ...repeating] : [];
  if (upcoming.length === 0)
    return [
      'You have no upcoming reminders. Ask me for one, e.g. "remind me to call mum tomorrow at 9".',
      ...repeatingPart,
      ...routinePart,
    ].join("\n");
  const lines = upcoming
    .slice(0, LISTED_LIMIT)
    .map((r, i) => `${i + 1}. ${formatLocal(new Date(r.at), zone)} — ${clip(r.text, LINE_TEXT)}${r.scheduleId ? " (repeats)" : ""}`);
  if (upcoming.length > LISTED_LIMIT) lines.push(`…and more later; cancel some of these to see them.`);
  return [
    `Your upcoming reminders (${zone} time):`,
    ...lines,
    ...repeatingPart,
    ...routinePart,
    "",
    "Cancel one with /cancel <number>, e.g. /cancel 1",
  ].join("\n");
}

/** /cancel <n>: cancels the n-th reminder of the list /reminders showed last. */
export async function cancelCommand(db: Database, userId: string, argument: string): Promise<string> {
  if (!/^\d{1,4}$/.test(argument) || Number(argument) < 1) {
    return "Tell me which reminder to cancel by its number in /reminders, e.g. /cancel 2";
  }
  const n = Number(argument);
  const { zone, list, result } = await db.withUser(userId, async (tx) => {
    const zone = await personZone(tx);
    const list = await shownList(tx);
    const id = list?.[n - 1];
    // One time of a repeating reminder is skipped on the web app's Reminders page, where it is planned again.
    const repeating = id ? (await upcomingReminders(tx)).find((r) => r.id === id)?.scheduleId : null;
    if (repeating) return { zone, list, result: { outcome: "repeating" as const } };
    return { zone, list, result: id ? await cancelReminder(tx, id) : null };
  });
  if (list === null) return "Send /reminders first: it numbers your upcoming reminders, then /cancel <number> cancels one.";
  if (!result) {
    const had = list.length === 0 ? "it was empty" : `it had ${list.length === 1 ? "only 1" : `1 to ${list.length}`}`;
    return `There is no reminder ${n} in the list I showed you last (${had}). Send /reminders to see your reminders now.`;
  }
  if (result.outcome === "unknown") return `Reminder ${n} no longer exists. Send /reminders to see your reminders now.`;
  if (result.outcome === "repeating")
    return `Reminder ${n} is the next time of a repeating reminder: pause or delete it on the web app's Reminders page (/login).`;
  const what = describe(result.reminder, zone);
  switch (result.outcome) {
    case "cancelled":
      return `Cancelled reminder ${n}: ${what}. I won't send it.`;
    case "already-cancelled":
      return `Reminder ${n} (${what}) was already cancelled.`;
    case "too-late":
      return tooLate(n, result.reminder, what);
  }
}

function describe(reminder: ReminderItem, zone: string): string {
  return `"${clip(reminder.text, LINE_TEXT)}" at ${formatLocal(new Date(reminder.at), zone)}`;
}

function tooLate(n: number, reminder: ReminderItem, what: string): string {
  if (reminder.status === "delivering") return `Reminder ${n} (${what}) is being sent right now; it can't be cancelled any more.`;
  if (reminder.status === "undeliverable") return `Reminder ${n} (${what}) is past: it was due but could not be delivered.`;
  return `Reminder ${n} (${what}) was already sent.`;
}
