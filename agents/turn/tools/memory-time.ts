// Dates the model gives the memory tools: when something happened (memory_capture's happenedAt), the
// window of a recall (memory_recall's since/until) and when a reminder is due (schedule_create's at,
// read with startOf like the rest). A date is a whole day on the person's clock
// (their timezone if known, else UTC); a date and time without an offset is their local time; one with
// an offset or Z is that instant. Stored times are instants (timestamptz), like every time in Postgres.
import { z } from "zod";
import { localToInstant } from "../../../platform/local-time";

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const WITH_OFFSET = /(?:Z|[+-]\d{2}:?\d{2})$/i;

/** A date (2026-05-01), a local date and time (2026-05-01T18:30) or an instant (…Z, …+02:00). */
export const dateOrTime = z.union([z.iso.date(), z.iso.datetime({ offset: true, local: true })]);

/** The first instant of `value`: a date's local midnight, a time's own instant. */
export function startOf(value: string, zone: string): Date {
  if (DATE.test(value)) return localToInstant(`${value}T00:00`, zone);
  return WITH_OFFSET.test(value) ? new Date(value) : localToInstant(value, zone);
}

/** The first instant after `value`: the next day's local midnight for a date, a millisecond later for a time. */
function endOf(value: string, zone: string): Date {
  if (DATE.test(value)) {
    const next = new Date(Date.parse(`${value}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
    return localToInstant(`${next}T00:00`, zone);
  }
  return new Date(startOf(value, zone).getTime() + 1);
}

/**
 * The recall window for since/until (either may be absent): `before` is exclusive. An error message
 * for the model when until is earlier than since.
 */
export function recallWindow(
  bounds: { since?: string | undefined; until?: string | undefined },
  zone: string,
): { since?: Date; before?: Date } | { error: string } {
  const since = bounds.since === undefined ? undefined : startOf(bounds.since, zone);
  const before = bounds.until === undefined ? undefined : endOf(bounds.until, zone);
  if (since && before && before.getTime() <= since.getTime()) {
    return { error: `until (${bounds.until}) is before since (${bounds.since}): give until on or after since` };
  }
  return { ...(since ? { since } : {}), ...(before ? { before } : {}) };
}
