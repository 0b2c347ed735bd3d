// The morning brief and the weekly review as the person set them: one `events` row of kind 'routine' per
// routine they changed from its default (agents/schedules/routines.ts) — its time, days and RRULE in the
// payload, when it next occurs in occurred_at, status active (on) | paused (off). A person without a row has
// the default, found by the hourly fan-out (./digest.ts, peopleAtLocalHour skips people with a row).
// One row per person and routine: its idempotency key is `routine:<name>`, unique per person.
// Every function takes a Database.withUser transaction: row-level security keeps it to one person.
import { and, eq, sql } from "drizzle-orm";
import type { Tx } from "../database";
import { events } from "../schema";

export type RoutineName = "brief" | "review";
export type Weekday = "MO" | "TU" | "WE" | "TH" | "FR" | "SA" | "SU";

export interface StoredRoutine {
  id: string;
  name: RoutineName;
  on: boolean;
  /** Local time of day, "07:15". */
  time: string;
  days: Weekday[];
  rule: string;
  /** The first occurrence on the person's clock ("2026-11-27T07:15"), the rule's start. */
  start: string;
  /** When it next occurs (UTC ISO), while on. */
  next: string;
}

const routineKey = (name: RoutineName) => `routine:${name}`;

export async function routineOf(tx: Tx, name: RoutineName): Promise<StoredRoutine | null> {
  const [row] = await tx
    .select({ id: events.id, payload: events.payload, next: events.occurredAt, status: events.status })
    .from(events)
    .where(and(eq(events.kind, "routine"), eq(events.idempotencyKey, routineKey(name))));
  if (!row) return null;
  const p = row.payload;
  return {
    id: row.id,
    name,
    on: row.status === "active",
    time: String(p.time),
    days: p.days as Weekday[],
    rule: String(p.rule),
    start: String(p.start),
    next: row.next.toISOString(),
  };
}

/** Keeps the routine as given (one row per person and routine, written over). */
export async function saveRoutine(
  tx: Tx,
  userId: string,
  routine: { name: RoutineName; on: boolean; time: string; days: Weekday[]; rule: string; start: string; next: Date },
): Promise<void> {
  const payload = { name: routine.name, time: routine.time, days: routine.days, rule: routine.rule, start: routine.start };
  const status = routine.on ? "active" : "paused";
  await tx
    .insert(events)
    .values({ userId, kind: "routine", occurredAt: routine.next, payload, status, idempotencyKey: routineKey(routine.name) })
    .onConflictDoUpdate({
      target: [events.userId, events.idempotencyKey],
      set: { occurredAt: routine.next, payload, status, kind: "routine" },
    });
}

/** Back to the default (the hourly fan-out finds the person again). */
export async function dropRoutine(tx: Tx, name: RoutineName): Promise<void> {
  await tx.delete(events).where(and(eq(events.kind, "routine"), eq(events.idempotencyKey, routineKey(name))));
}

/**
 * Moves the routine's next occurrence from `from` to `to`, only if it still is `from`: the occurrence
 * that fired plans the one after it, and an older occurrence (the person moved it since) changes nothing.
 * False when it changed nothing.
 */
export async function advanceRoutine(tx: Tx, name: RoutineName, from: Date, to: Date): Promise<boolean> {
  const moved = await tx
    .update(events)
    .set({ occurredAt: to })
    .where(
      and(
        eq(events.kind, "routine"),
        eq(events.idempotencyKey, routineKey(name)),
        eq(events.status, "active"),
        // `to` already: this step ran before (Inngest runs a step at least once) and it stays planned.
        sql`${events.occurredAt} in (${from.toISOString()}::timestamptz, ${to.toISOString()}::timestamptz)`,
      ),
    )
    .returning({ id: events.id });
  return moved.length > 0;
}
