// The web app's reminders (session required; changes same origin):
//   GET    /api/reminders       {upcoming, past, schedules}: upcoming soonest first, past (sent, cancelled, …)
//                               newest first; each {id, text, at (UTC ISO), status, createdAt, scheduleId};
//                               schedules (repeating reminders) {id, text, rule, start, status, next,
//                               repeats (the rule in words), upcoming (the next three, UTC ISO)}
//   DELETE /api/reminders/:id   cancels it: 200 {cancelled: true, reminder} (again: the same answer);
//                               404 for an id that is not the person's (RLS hides the rest), 409 when
//                               it is being sent or was sent, 400 for an id that is not a UUID; one time
//                               of a repeating reminder is skipped, the next one planned in its place
//   POST   /api/reminders/schedules/:id/pause | /resume   stops or restarts a repeating reminder: its
//                               occurrence waiting is cancelled, or the next one planned; 200 {schedule}
//   PATCH  /api/reminders/schedules/:id {text?, repeat?, time?}  changes its words, its RRULE (400 for a
//                               rule Soma does not keep) or its time of day ("10:00"); the waiting
//                               occurrence is planned again
//   DELETE /api/reminders/schedules/:id                    deletes it and its waiting occurrence
// Pausing, resuming and editing spend the person's edit budget (agents/rate-limit.ts): each plans anew.
import { Hono, type Context } from "hono";
import { z } from "zod";
import { profileOf } from "../../db/repositories/people";
import { cancelReminder, pastReminders, upcomingReminders } from "../../db/repositories/reminders";
import { cancelPendingOccurrence, listSchedules, scheduleOf, updateSchedule, type Schedule } from "../../db/repositories/schedules";
import type { Tx } from "../../db/database";
import { planNextOccurrence } from "../../agents/schedules/plan";
import { describeRule, nextOccurrences, parseRule } from "../../agents/schedules/recurrence";
import { handOver as handToDelivery } from "../../agents/local-runs";
import { runInAgent } from "../agent-routing";
import { reminderCreated } from "../../agents/workflows/events";
import { zoneOrUtc } from "../../platform/local-time";
import { limitBody } from "../body-limit";
import { rateLimited } from "../rate-budget";
import { readJson } from "../validation";
import { requireSameOrigin } from "../auth/origin";
import { requireSession } from "../auth/session";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";

export const reminders = new Hono<AppEnv>()
  .use(requireSession("reject"))
  .get("/", async (c) => {
    const { upcoming, past, schedules, zone } = await c.var.db.withUser(c.var.person.id, async (tx) => ({
      upcoming: await upcomingReminders(tx),
      past: await pastReminders(tx),
      schedules: await listSchedules(tx),
      zone: zoneOrUtc((await profileOf(tx))?.timezone),
    }));
    return c.json({ upcoming, past, schedules: schedules.map((schedule) => shown(schedule, zone)) });
  })
  .post("/schedules/:id/:action{pause|resume}", requireSameOrigin, rateLimited("edit"), async (c) => {
    const action = c.req.param("action") as "pause" | "resume";
    const schedule = await change(c, async (tx, found, zone) => {
      await cancelPendingOccurrence(tx, found.id);
      await updateSchedule(tx, found.id, { status: action === "pause" ? "paused" : "active" });
      return action === "resume" ? planNextOccurrence(tx, c.var.person.id, found.id, new Date(), zone) : null;
    });
    return c.json({ schedule });
  })
  .patch("/schedules/:id", requireSameOrigin, limitBody(4096), rateLimited("edit"), async (c) => {
    const edit = await readJson(c, ScheduleEdit);
    const rule = edit.repeat === undefined ? null : parseRule(edit.repeat);
    if (rule && !rule.ok) throw new ApiError("bad_request", `That repeat is not one Soma keeps: ${rule.error}.`);
    const schedule = await change(c, async (tx, found, zone) => {
      await cancelPendingOccurrence(tx, found.id);
      // A new time of day: the first occurrence's date stays, its time changes, and the rule's own hour and
      // minute (if it named them) give way to it.
      const kept = rule?.ok ? rule.rule : found.rule;
      const timed = edit.time
        ? kept
            .split(";")
            .filter((part) => !/^BY(HOUR|MINUTE)=/.test(part))
            .join(";")
        : kept;
      await updateSchedule(tx, found.id, {
        ...(edit.text ? { text: edit.text } : {}),
        ...(timed !== found.rule ? { rule: timed } : {}),
        ...(edit.time ? { start: `${found.start.slice(0, 10)}T${edit.time}` } : {}),
      });
      return found.status === "active" ? planNextOccurrence(tx, c.var.person.id, found.id, new Date(), zone) : null;
    });
    return c.json({ schedule });
  })
  .delete("/schedules/:id", requireSameOrigin, async (c) => {
    const schedule = await change(c, async (tx, found) => {
      await cancelPendingOccurrence(tx, found.id);
      await updateSchedule(tx, found.id, { status: "cancelled" });
      return null;
    });
    return c.json({ deleted: true, schedule });
  })
  .delete("/:id", requireSameOrigin, async (c) => {
    const id = z.uuid().safeParse(c.req.param("id"));
    if (!id.success) throw new ApiError("bad_request", "Reminder ids are UUIDs.");
    const userId = c.var.person.id;
    const { result, planned } = await c.var.db.withUser(userId, async (tx) => {
      const result = await cancelReminder(tx, id.data);
      // One time of a repeating reminder is skipped: the next one is planned in its place.
      const skipped = result.outcome === "cancelled" && result.reminder.scheduleId ? result.reminder : null;
      const zone = zoneOrUtc((await profileOf(tx))?.timezone);
      const planned = skipped ? await planNextOccurrence(tx, userId, skipped.scheduleId!, new Date(skipped.at), zone) : null;
      return { result, planned };
    });
    if (planned) await handOver(c, planned);
    if (result.outcome === "unknown") throw new ApiError("not_found", "No such reminder.");
    if (result.outcome === "too-late") {
      throw new ApiError(
        "conflict",
        result.reminder.status === "delivering"
          ? "This reminder is being sent right now."
          : "This reminder is past; it can no longer be cancelled.",
      );
    }
    return c.json({ cancelled: true, reminder: result.reminder });
  });

const ScheduleEdit = z
  .object({
    text: z.string().trim().min(1).max(1000).optional(),
    repeat: z.string().trim().min(1).max(200).optional(),
    time: z
      .string()
      .regex(/^([01]\d|2[0-3]):[0-5]\d$/, "a time of day like 09:30")
      .optional(),
  })
  .refine((edit) => edit.text !== undefined || edit.repeat !== undefined || edit.time !== undefined, "Give text, repeat or time.");

/** A schedule as the web app shows it: its rule in words and its next three occurrences. */
function shown(schedule: Schedule, zone: string) {
  const upcoming =
    schedule.status === "active" ? nextOccurrences(schedule.rule, schedule.start, zone, new Date(), 3).map((d) => d.toISOString()) : [];
  return { ...schedule, repeats: describeRule(schedule.rule, schedule.start), upcoming };
}

/**
 * Changes one of the person's schedules in one transaction (404 when it is not theirs or deleted), then
 * hands over the occurrence it planned, if any; answers the schedule as it now is.
 */
async function change(
  c: Context<AppEnv>,
  work: (tx: Tx, schedule: Schedule, zone: string) => Promise<{ eventId: string; at: string } | null>,
) {
  const id = z.uuid().safeParse(c.req.param("id"));
  if (!id.success) throw new ApiError("bad_request", "Schedule ids are UUIDs.");
  const userId = c.var.person.id;
  const result = await c.var.db.withUser(userId, async (tx) => {
    const found = await scheduleOf(tx, id.data);
    if (!found || found.status === "cancelled") return null;
    const zone = zoneOrUtc((await profileOf(tx))?.timezone);
    const planned = await work(tx, found, zone);
    return { planned, zone, schedule: (await scheduleOf(tx, id.data))! };
  });
  if (!result) throw new ApiError("not_found", "No such repeating reminder.");
  if (result.planned) await handOver(c, result.planned);
  return shown(result.schedule, result.zone);
}

/** An occurrence planned here, handed to its delivery (reminder-deliver, or the agent in dev mode). */
async function handOver(c: Context<AppEnv>, planned: { eventId: string; at: string }): Promise<void> {
  const userId = c.var.person.id;
  const event = reminderCreated.create({ userId, ...planned }, { id: `reminder-${planned.eventId}` });
  await handToDelivery(c.var.config, event, { requestId: c.var.requestId, userId }, runInAgent(c.env, userId));
}
