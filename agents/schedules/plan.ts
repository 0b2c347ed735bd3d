// The next occurrence of a repeating schedule, made a reminder of its own: when the schedule is made
// (schedule_create with `repeat`), each time an occurrence is delivered (reminder-deliver), and when it is
// resumed or changed (the web app). One occurrence waits at a time, keyed by schedule and instant, so
// planning the same occurrence twice (a step run again) makes one reminder, and its delivery event
// (`reminder-<id>`) is one event. A time the person skipped is passed over. A schedule whose rule has
// ended (COUNT, UNTIL) is cancelled.
import type { Tx } from "../../db/database";
import { createReminder, refreshReminderText, reminderStatus } from "../../db/repositories/reminders";
import { scheduleOf, updateSchedule } from "../../db/repositories/schedules";
import { nextOccurrences } from "./recurrence";

/** The occurrence planned: its reminder's id and when it falls due; null when none (paused, ended, gone). */
export async function planNextOccurrence(
  tx: Tx,
  userId: string,
  scheduleId: string,
  after: Date,
  zone: string,
): Promise<{ eventId: string; at: string } | null> {
  const schedule = await scheduleOf(tx, scheduleId);
  // Paused, deleted, or not this person's: nothing is planned.
  if (!schedule) return null;
  if (schedule.status !== "active") return null;
  // A time the person skipped stays skipped: the next one after it is planned instead.
  let cursor = after;
  for (let attempt = 0; attempt < 10; attempt++) {
    const [next] = nextOccurrences(schedule.rule, schedule.start, zone, cursor, 1);
    if (!next) {
      await updateSchedule(tx, scheduleId, { status: "cancelled" });
      return null;
    }
    const eventId = await createReminder(tx, userId, {
      text: schedule.text,
      at: next,
      sourceId: null,
      idempotencyKey: `schedule:${scheduleId}:${next.toISOString()}`,
      scheduleId,
    });
    if ((await reminderStatus(tx, eventId)) === "cancelled") {
      cursor = next;
      continue;
    }
    // Planned before (a step run again): it takes the schedule's words as they are now.
    await refreshReminderText(tx, eventId, schedule.text);
    await updateSchedule(tx, scheduleId, { next });
    return { eventId, at: next.toISOString() };
  }
  return null;
}
