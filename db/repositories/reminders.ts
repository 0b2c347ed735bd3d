// Reminders: created, listed (upcoming and past), cancelled and delivered, and the numbered list
// Telegram's /reminders showed last, which /cancel <n> refers to. Reminders are `events` rows of kind
// 'reminder'; their status moves scheduled → delivering → delivered | undeliverable (reminder-deliver:
// claimReminder, finishReminder), or scheduled → cancelled (cancelReminder). Each move is one
// conditional UPDATE on the row, so a cancel and a delivery can never both win. Other repositories
// touch reminders only as events among others: the morning brief (./digest.ts) lists upcoming events of
// every kind, and an export and import (./export.ts) carry every events row as it is. The model's
// schedule_create keeps at most a cap of reminders still to come (createReminderWithinCap), counted
// under a per-person lock in the insert's transaction.
// Every function takes a Database.withUser transaction: row-level security keeps it to one person.
import { and, asc, desc, eq, ne, sql } from "drizzle-orm";
import type { Tx } from "../database";
import { events, sources } from "../schema";

export type ReminderStatus = "scheduled" | "delivering" | "delivered" | "undeliverable" | "cancelled";

export interface ReminderItem {
  id: string;
  text: string;
  at: string;
  status: ReminderStatus;
  createdAt: string;
  /** The repeating schedule this is an occurrence of, if any. */
  scheduleId: string | null;
}

/**
 * Records a reminder to deliver at `at`. With an idempotency key (a turn's write: source message + tool
 * + arguments) a second call returns the same event id instead of adding a second reminder; background
 * functions pass none (null never conflicts).
 */
export async function createReminder(
  tx: Tx,
  userId: string,
  reminder: { text: string; at: Date; sourceId: string | null; idempotencyKey?: string | null; scheduleId?: string },
): Promise<string> {
  const key = reminder.idempotencyKey ?? null;
  const [row] = await tx
    .insert(events)
    .values({
      userId,
      kind: "reminder",
      occurredAt: reminder.at,
      // An occurrence of a repeating schedule (./schedules.ts) names it: its delivery plans the next one.
      payload: { text: reminder.text, ...(reminder.scheduleId ? { scheduleId: reminder.scheduleId } : {}) },
      status: "scheduled",
      sourceId: reminder.sourceId,
      idempotencyKey: key,
    })
    .onConflictDoNothing({ target: [events.userId, events.idempotencyKey] })
    .returning({ id: events.id });
  if (row) return row.id;
  const [existing] = key
    ? await tx
        .select({ id: events.id })
        .from(events)
        .where(and(eq(events.userId, userId), eq(events.idempotencyKey, key)))
    : [];
  if (!existing) throw new Error("createReminder returned no row");
  return existing.id;
}

/**
 * The person's reminders still to come (scheduled, due after `now`), counted under a transaction-scoped
 * advisory lock on the person that holds them steady until the transaction ends (their users row is not
 * the app's to lock: soma_app may not update it). Whoever counts them against a cap counts them here
 * (schedule_create before its insert, an import after its rows went in: ./import-caps.ts), so two
 * writers at once never both see room for the last one. No cycle: a turn waits for nothing after taking
 * it but its own new row, and an import's rows carry no idempotency key a turn's insert could wait on.
 */
export async function lockedFutureReminderCount(tx: Tx, userId: string, now: Date): Promise<number> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`soma:future-reminders:${userId}`}, 0))`);
  const [row] = await tx
    .select({ n: sql<number>`count(*)::int` })
    .from(events)
    .where(
      and(
        eq(events.userId, userId),
        eq(events.kind, "reminder"),
        eq(events.status, "scheduled"),
        sql`${events.occurredAt} > ${now.toISOString()}::timestamptz`,
      ),
    );
  return row?.n ?? 0;
}

/**
 * createReminder for the model's schedule_create, unless the person already has `cap` reminders still to
 * come: then nothing is written and the answer is how many are waiting. Counted under
 * lockedFutureReminderCount in the insert's own transaction, so two turns at once never both take the last
 * place. A re-run (the same idempotency key) gets its reminder back, whatever the count is now.
 */
export async function createReminderWithinCap(
  tx: Tx,
  userId: string,
  reminder: { text: string; at: Date; sourceId: string | null; idempotencyKey: string },
  cap: number,
): Promise<{ eventId: string } | { waiting: number }> {
  const [existing] = await tx
    .select({ id: events.id })
    .from(events)
    .where(and(eq(events.userId, userId), eq(events.idempotencyKey, reminder.idempotencyKey)));
  if (existing) return { eventId: existing.id };
  const waiting = await lockedFutureReminderCount(tx, userId, new Date());
  if (waiting >= cap) return { waiting };
  return { eventId: await createReminder(tx, userId, reminder) };
}

/** The most past reminders listed (newest first); upcoming ones are all listed. */
const PAST_LIMIT = 50;
/** Upcoming reminders a Telegram list shows (and /cancel can number). */
export const LISTED_LIMIT = 20;

function toItem(row: { id: string; payload: Record<string, unknown>; at: Date; status: string; createdAt: Date }): ReminderItem {
  return {
    id: row.id,
    text: String(row.payload.text ?? ""),
    at: row.at.toISOString(),
    status: row.status as ReminderStatus,
    createdAt: row.createdAt.toISOString(),
    scheduleId: typeof row.payload.scheduleId === "string" ? row.payload.scheduleId : null,
  };
}

const columns = { id: events.id, payload: events.payload, at: events.occurredAt, status: events.status, createdAt: events.createdAt };

/** Reminders still waiting to be sent, soonest first. */
export async function upcomingReminders(tx: Tx, limit = 200): Promise<ReminderItem[]> {
  const rows = await tx
    .select(columns)
    .from(events)
    .where(and(eq(events.kind, "reminder"), eq(events.status, "scheduled")))
    .orderBy(asc(events.occurredAt), asc(events.createdAt))
    .limit(limit);
  return rows.map(toItem);
}

/** Reminders sent, being sent, undeliverable or cancelled, newest first. */
export async function pastReminders(tx: Tx, limit = PAST_LIMIT): Promise<ReminderItem[]> {
  const rows = await tx
    .select(columns)
    .from(events)
    .where(and(eq(events.kind, "reminder"), ne(events.status, "scheduled")))
    .orderBy(desc(events.occurredAt), desc(events.createdAt))
    .limit(limit);
  return rows.map(toItem);
}

export type CancelOutcome = { outcome: "cancelled" | "already-cancelled" | "too-late"; reminder: ReminderItem } | { outcome: "unknown" };

/**
 * Cancels a scheduled reminder; cancelling it again is answered as already cancelled (idempotent).
 * One that is being sent or was sent is "too-late"; one this person cannot see is "unknown".
 */
export async function cancelReminder(tx: Tx, id: string): Promise<CancelOutcome> {
  const [cancelled] = await tx
    .update(events)
    .set({ status: "cancelled" })
    .where(and(eq(events.id, id), eq(events.kind, "reminder"), eq(events.status, "scheduled")))
    .returning(columns);
  if (cancelled) return { outcome: "cancelled", reminder: toItem(cancelled) };
  const [row] = await tx
    .select(columns)
    .from(events)
    .where(and(eq(events.id, id), eq(events.kind, "reminder")));
  if (!row) return { outcome: "unknown" };
  return { outcome: row.status === "cancelled" ? "already-cancelled" : "too-late", reminder: toItem(row) };
}

/** The `sources` row holding the numbered list Telegram showed last (one per person, replaced each time). */
export const SHOWN_LIST = { kind: "reminder-list", externalId: "telegram" } as const;

/** Remembers the ids of the list just shown, in the order shown: /cancel <n> means ids[n - 1]. */
export async function rememberShownList(tx: Tx, userId: string, ids: string[]): Promise<void> {
  await tx
    .insert(sources)
    .values({ userId, ...SHOWN_LIST, payload: { ids, shownAt: new Date().toISOString() } })
    .onConflictDoUpdate({ target: [sources.userId, sources.kind, sources.externalId], set: { payload: sql`excluded.payload` } });
}

/** The ids of the list Telegram showed last, in order; null when no list was ever shown. */
export async function shownList(tx: Tx): Promise<string[] | null> {
  const [row] = await tx
    .select({ payload: sources.payload })
    .from(sources)
    .where(and(eq(sources.kind, SHOWN_LIST.kind), eq(sources.externalId, SHOWN_LIST.externalId)));
  const ids = row?.payload.ids;
  return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === "string") : null;
}

/** A reminder's status, or null when this person has no such reminder. */
export async function reminderStatus(tx: Tx, id: string): Promise<ReminderStatus | null> {
  const [row] = await tx
    .select({ status: events.status })
    .from(events)
    .where(and(eq(events.id, id), eq(events.kind, "reminder")));
  return (row?.status as ReminderStatus | undefined) ?? null;
}

// ---- delivery (reminder-deliver) ----

/** A reminder claimed for delivery: what to say, and when it was due. */
export interface DueReminder {
  text: string;
  at: Date;
  /** The repeating schedule it is an occurrence of (./schedules.ts), if any. */
  scheduleId: string | null;
}

/** Moves a scheduled reminder to `delivering`; null when it is not (any longer) waiting to be sent. */
export async function claimReminder(tx: Tx, eventId: string): Promise<DueReminder | null> {
  const [row] = await tx
    .update(events)
    .set({ status: "delivering" })
    .where(and(eq(events.id, eventId), eq(events.kind, "reminder"), eq(events.status, "scheduled")))
    .returning({ payload: events.payload, at: events.occurredAt });
  if (!row) return null;
  const scheduleId = typeof row.payload.scheduleId === "string" ? row.payload.scheduleId : null;
  return { text: String(row.payload.text ?? ""), at: row.at, scheduleId };
}

/** The words of a reminder claimed for delivery (status `delivering`); null when it is gone or not claimed. */
export async function claimedReminderText(tx: Tx, eventId: string): Promise<string | null> {
  const [row] = await tx
    .select({ payload: events.payload })
    .from(events)
    .where(and(eq(events.id, eventId), eq(events.kind, "reminder"), eq(events.status, "delivering")));
  return row ? String(row.payload.text ?? "") : null;
}

/** Records how a claimed reminder's delivery ended. */
export async function finishReminder(tx: Tx, eventId: string, status: "delivered" | "undeliverable"): Promise<void> {
  await tx.update(events).set({ status }).where(eq(events.id, eventId));
}

export type ReminderChannel = "telegram" | "push";

/** Whether a channel already took this reminder (payload.sent_<channel>, set by markReminderSent). */
export async function reminderSentOn(tx: Tx, eventId: string, channel: ReminderChannel): Promise<boolean> {
  const [row] = await tx
    .select({ sent: sql<boolean>`${events.payload} ? ${`sent_${channel}`}` })
    .from(events)
    .where(and(eq(events.id, eventId), eq(events.kind, "reminder")));
  return row?.sent ?? false;
}

/**
 * Notes that a channel took the reminder (when, in payload.sent_<channel>), once it did: a step that
 * runs again then sends nothing twice. Noted after the send, so a send is never lost to a crash between
 * the two; a crash in that moment sends it again (a push then replaces its twin on the device: same tag).
 */
export async function markReminderSent(tx: Tx, eventId: string, channel: ReminderChannel): Promise<void> {
  await tx.execute(sql`
    update events set payload = payload || jsonb_build_object(${`sent_${channel}`}::text, now())
    where id = ${eventId} and kind = 'reminder'`);
}

/** A repeating one's occurrence still waiting takes the schedule's words as they are now (after an edit). */
export async function refreshReminderText(tx: Tx, eventId: string, text: string): Promise<void> {
  await tx
    .update(events)
    .set({ payload: sql`${events.payload} || ${JSON.stringify({ text })}::jsonb` })
    .where(and(eq(events.id, eventId), eq(events.kind, "reminder"), eq(events.status, "scheduled")));
}
