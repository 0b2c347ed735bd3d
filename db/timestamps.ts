// Timestamps as the repositories answer them: ISO 8601 in UTC. A timestamptz column arrives from the
// driver as a Date, or as text where a statement built it (a CTE, a json column, the embedded server).

/** The instant as ISO 8601 UTC ("2026-11-24T08:15:00.000Z"). */
export function iso(value: string | Date): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

/** As `iso`, keeping null (a column such as happened_at that is only set when known). */
export function isoOrNull(value: string | Date | null): string | null {
  return value === null ? null : iso(value);
}
