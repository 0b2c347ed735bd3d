// Repeating reminders ("every Monday at 9"): one `events` row of kind 'schedule' per schedule — its words,
// its RRULE and the local date and time of its first occurrence in the payload, when it next occurs in
// occurred_at, status active | paused | cancelled — and, while it is active, exactly one occurrence
// waiting: a reminder row (./reminders.ts) naming it (payload.scheduleId), delivered like any reminder.
// Delivering an occurrence plans the next (agents/schedules/plan.ts), so nothing scans for due schedules.
// Every function takes a Database.withUser transaction: row-level security keeps it to one person.
import { and, asc, eq, ne, sql } from "drizzle-orm";
import type { Tx } from "../database";
import { events } from "../schema";

export type ScheduleStatus = "active" | "paused" | "cancelled";

export interface Schedule {
  id: string;
  text: string;
  /** RRULE (agents/schedules/recurrence.ts's subset). */
  rule: string;
  /** The first occurrence, on the person's clock ("2026-11-30T09:00"). */
  start: string;
  status: ScheduleStatus;
  /** The next occurrence (UTC ISO), while active. */
  next: string;
  createdAt: string;
}

const columns = { id: events.id, payload: events.payload, next: events.occurredAt, status: events.status, createdAt: events.createdAt };

function toSchedule(row: { id: string; payload: Record<string, unknown>; next: Date; status: string; createdAt: Date }): Schedule {
  return {
    id: row.id,
    text: String(row.payload.text ?? ""),
    rule: String(row.payload.rule ?? ""),
    start: String(row.payload.start ?? ""),
    status: row.status as ScheduleStatus,
    next: row.next.toISOString(),
    createdAt: row.createdAt.toISOString(),
  };
}

/**
 * A new schedule (active), unless the person has `cap` active ones: counted under a per-person lock in
 * this transaction. An idempotency key (a turn's write) gives a re-run its schedule back.
 */
export async function createSchedule(
  tx: Tx,
  userId: string,
  schedule: { text: string; rule: string; start: string; next: Date; sourceId: string | null; idempotencyKey: string | null },
  cap: number,
): Promise<{ id: string; created: boolean } | { active: number }> {
  if (schedule.idempotencyKey) {
    const [existing] = await tx
      .select({ id: events.id })
      .from(events)
      .where(and(eq(events.userId, userId), eq(events.idempotencyKey, schedule.idempotencyKey)));
    if (existing) return { id: existing.id, created: false };
  }
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`soma:schedules:${userId}`}, 0))`);
  const [count] = await tx
    .select({ n: sql<number>`count(*)::int` })
    .from(events)
    .where(and(eq(events.kind, "schedule"), eq(events.status, "active")));
  if ((count?.n ?? 0) >= cap) return { active: count?.n ?? 0 };
  const [row] = await tx
    .insert(events)
    .values({
      userId,
      kind: "schedule",
      occurredAt: schedule.next,
      payload: { text: schedule.text, rule: schedule.rule, start: schedule.start },
      status: "active",
      sourceId: schedule.sourceId,
      idempotencyKey: schedule.idempotencyKey,
    })
    .returning({ id: events.id });
  if (!row) throw new Error("createSchedule inserted no row");
  return { id: row.id, created: true };
}

/** The person's schedules that are not cancelled, soonest first. */
export async function listSchedules(tx: Tx): Promise<Schedule[]> {
  const rows = await tx
    .select(columns)
    .from(events)
    .where(and(eq(events.kind, "schedule"), ne(events.status, "cancelled")))
    .orderBy(asc(events.occurredAt));
  return rows.map(toSchedule);
}

export async function scheduleOf(tx: Tx, id: string): Promise<Schedule | null> {
  const [row] = await tx
    .select(columns)
    .from(events)
    .where(and(eq(events.id, id), eq(events.kind, "schedule")));
  return row ? toSchedule(row) : null;
}

/** Changes a schedule: its status, its words, its rule and first occurrence, its next occurrence. */
export async function updateSchedule(
  tx: Tx,
  id: string,
  change: { status?: ScheduleStatus; text?: string; rule?: string; start?: string; next?: Date },
): Promise<void> {
  const payload: Record<string, string> = {};
  if (change.text !== undefined) payload.text = change.text;
  if (change.rule !== undefined) payload.rule = change.rule;
  if (change.start !== undefined) payload.start = change.start;
  await tx
    .update(events)
    .set({
      ...(change.status ? { status: change.status } : {}),
      ...(change.next ? { occurredAt: change.next } : {}),
      ...(Object.keys(payload).length ? { payload: sql`${events.payload} || ${JSON.stringify(payload)}::jsonb` } : {}),
    })
    .where(and(eq(events.id, id), eq(events.kind, "schedule")));
}

/**
 * Removes the occurrence of `scheduleId` still waiting, if any (a pause, an edit, a delete): it was never
 * sent, so nothing of it is kept, and its delivery, when it wakes, finds nothing to send.
 */
export async function cancelPendingOccurrence(tx: Tx, scheduleId: string): Promise<void> {
  await tx
    .delete(events)
    .where(and(eq(events.kind, "reminder"), eq(events.status, "scheduled"), sql`${events.payload}->>'scheduleId' = ${scheduleId}`));
}
