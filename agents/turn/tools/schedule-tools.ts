// The reminder tools the model sees: schedule_create (once, or repeating by an RRULE: "every Monday at
// 9"), schedule_list, and routine_set (the morning brief and weekly review moved or turned off). Bound to this agent's person like the memory tools, guarded the same way when
// someone else's words are in view (untrusted-memory.ts), and reading times on the person's clock.
// A reminder is handed to the workflow that delivers it (context.scheduleReminder); a repeating one is a
// schedule whose next occurrence is such a reminder (agents/schedules/plan.ts), planned again each time
// one is delivered.
import { tool, type ToolSet } from "ai";
import { z } from "zod";
import { IMPORT_CAPS } from "../../../db/repositories/import-caps";
import { recordSource } from "../../../db/repositories/memory";
import { createReminderWithinCap, upcomingReminders } from "../../../db/repositories/reminders";
import { createSchedule } from "../../../db/repositories/schedules";
import { formatLocal, isoLocal } from "../../../platform/local-time";
import { planNextOccurrence } from "../../schedules/plan";
import { changeRoutine, RoutineChange, routineView } from "../../schedules/routines";
import { describeRule, MAX_SCHEDULES, nextOccurrences, parseRule } from "../../schedules/recurrence";
import { thirdPartyRefusal, type ToolContext } from "./context";
import { idempotencyKey } from "./idempotency";
import { startOf } from "./memory-time";

/** Reminders schedule_list names at most (the rest: the web app's Reminders page, Telegram's /reminders). */
const LISTED_REMINDERS = 20;

export function scheduleTools(context: ToolContext): ToolSet {
  const { db, userId } = context;
  const zone = () => context.timezone ?? "UTC";

  return {
    schedule_create: tool({
      description: "Schedule a reminder to send the person at a time, once or repeating.",
      inputSchema: z.object({
        text: z.string().trim().min(1).max(1000),
        at: z.iso
          .datetime({ offset: true, local: true })
          .describe(
            "When (for a repeating one: the first time; its time of day is every occurrence's): the person's local date and time without an offset (2026-11-24T09:00), or ISO 8601 with an offset or Z",
          ),
        repeat: z
          .string()
          .trim()
          .max(200)
          .optional()
          .describe(
            "Only to repeat it: an RFC 5545 RRULE, e.g. FREQ=WEEKLY;BYDAY=MO (every Monday), FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR (every weekday), FREQ=MONTHLY;BYMONTHDAY=1 (the 1st of every month), FREQ=WEEKLY;INTERVAL=2;BYDAY=FR (every other Friday), FREQ=DAILY",
          ),
      }),
      execute: async ({ text, at, repeat }, { messages }) => {
        const refused = await thirdPartyRefusal("schedule_create", messages, () => [text]);
        if (refused) return { error: refused };
        // An explicit offset or Z names the instant itself; a bare local time is the person's clock.
        const when = startOf(at, zone());
        if (repeat !== undefined) return repeating(text, isoLocal(when, zone()), repeat);
        if (when.getTime() < Date.now() - 60_000) return { error: "that time is in the past" };
        // A re-run of this turn (same message, same reminder) gets the same event id back, so the
        // delivery below (Inngest event `reminder-${eventId}`, deduplicated by id) is the same one too.
        // The time is keyed as the instant it names: "…T09:00:00+02:00" and "…T07:00:00Z" are one reminder.
        const key = await idempotencyKey(context.source, "schedule_create", { text, at: when.toISOString() });
        // At most as many waiting as an import may leave (IMPORT_CAPS.futureReminders): each one is a
        // message when it falls due. Counted in the insert's transaction (issue 25).
        const created = await db.withUser(userId, async (tx) => {
          const sourceId = await recordSource(tx, userId, context.source);
          return createReminderWithinCap(tx, userId, { text, at: when, sourceId, idempotencyKey: key }, IMPORT_CAPS.futureReminders);
        });
        if ("waiting" in created) return { error: tooManyReminders(created.waiting) };
        return handOver(created.eventId, when.toISOString());
      },
    }),

    routine_set: tool({
      description:
        'Move the morning brief (by default every day at 08:00) or the weekly review (by default Sunday 18:00), or turn either off or back on: "brief at 7:15 on weekdays", "no weekly review any more". Give only what changes.',
      inputSchema: z.object({ routine: z.enum(["brief", "review"]), ...RoutineChange.shape }),
      execute: async ({ routine, ...change }, { messages }) => {
        const refused = await thirdPartyRefusal("routine_set", messages, () => []);
        if (refused) return { error: refused };
        if (change.on === undefined && !change.time && !change.days) return { error: "say what changes: on, time or days" };
        const changed = await changeRoutine(db, userId, routine, change, new Date());
        if ("problem" in changed) return { error: `not changed: ${changed.problem}` };
        const { view, planned } = changed;
        const handed = planned ? ((await context.scheduleRoutine?.(routine, planned)) ?? false) : true;
        return {
          routine,
          on: view.on,
          repeats: view.repeats,
          ...(view.next ? { next: isoLocal(new Date(view.next), zone()) } : {}),
          ...(handed ? {} : { warning: "saved, but it cannot be scheduled right now" }),
        };
      },
    }),

    schedule_list: tool({
      description:
        'The person\'s reminders still to be sent, soonest first ("what are my reminders?"), in their local time; an occurrence of a repeating one says how it repeats.',
      inputSchema: z.object({}),
      execute: async () => {
        const now = new Date();
        const { upcoming, routines } = await db.withUser(userId, async (tx) => ({
          upcoming: await upcomingReminders(tx, LISTED_REMINDERS + 1),
          routines: [await routineView(tx, "brief", zone(), now), await routineView(tx, "review", zone(), now)],
        }));
        return {
          timezone: zone(),
          reminders: upcoming.slice(0, LISTED_REMINDERS).map((r) => {
            const at = new Date(r.at);
            return { text: r.text, at: isoLocal(at, zone()), when: formatLocal(at, zone()), ...(r.scheduleId ? { repeating: true } : {}) };
          }),
          ...(upcoming.length > LISTED_REMINDERS ? { more: "and more later (the web app's Reminders page lists them all)" } : {}),
          // The brief and the review come too (routine_set moves them).
          routines: routines.map((r) => ({ routine: r.name, on: r.on, repeats: r.repeats })),
        };
      },
    }),
  };

  /** Hands a stored reminder to its delivery, and says so to the model. */
  async function handOver(eventId: string, at: string) {
    context.onActivity?.({ kind: "scheduled", eventId, at });
    const delivery = (await context.scheduleReminder?.({ eventId, at })) ?? false;
    return delivery ? { eventId } : { eventId, warning: "saved, but reminders cannot be delivered right now" };
  }

  /** A repeating reminder: the schedule (at most MAX_SCHEDULES active), and its first occurrence handed over. */
  async function repeating(text: string, start: string, repeat: string) {
    const rule = parseRule(repeat);
    if (!rule.ok) return { error: `not a repeat Soma keeps: ${rule.error}` };
    const [first] = nextOccurrences(rule.rule, start, zone(), new Date(), 1);
    if (!first) return { error: "that repeat has no occurrence after now" };
    const key = await idempotencyKey(context.source, "schedule_create", { text, start, repeat: rule.rule });
    const made = await db.withUser(userId, async (tx) => {
      const sourceId = await recordSource(tx, userId, context.source);
      const schedule = await createSchedule(
        tx,
        userId,
        { text, rule: rule.rule, start, next: first, sourceId, idempotencyKey: key },
        MAX_SCHEDULES,
      );
      if ("active" in schedule) return schedule;
      const occurrence = await planNextOccurrence(tx, userId, schedule.id, new Date(), zone());
      return { scheduleId: schedule.id, occurrence };
    });
    if ("active" in made) {
      return {
        error: `You already have ${made.active} repeating reminders; that is the most Soma keeps. Delete one you no longer need (the web app's Reminders page), then ask again.`,
      };
    }
    if (!made.occurrence) return { error: "that repeat has no occurrence after now" };
    const handed = await handOver(made.occurrence.eventId, made.occurrence.at);
    return {
      ...handed,
      scheduleId: made.scheduleId,
      repeats: describeRule(rule.rule, start),
      next: isoLocal(new Date(made.occurrence.at), zone()),
    };
  }
}

/** What the model is told (and may tell the person) when the reminders waiting are at the cap. */
function tooManyReminders(waiting: number): string {
  return `You already have ${waiting} reminders waiting; that is the most Soma keeps. Cancel one you no longer need (/reminders, then /cancel <number>, or the web app), or wait until one has been sent, then ask again.`;
}
