// Structured log lines (one JSON object per line, for Workers Logs and later a log sink). A line never
// carries a token-bearing path or query value (a sign-in link, ?token=, OAuth's code): see scrub.ts.
import { redactTokenBearing } from "./telemetry/scrub";

/** `Name: message` of anything thrown. */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** Writes one structured log line; errors go to stderr. */
export function logJson(level: "error" | "warn" | "info", fields: Record<string, unknown>): void {
  const line = redactTokenBearing(JSON.stringify({ level, ...fields }));
  if (level === "info") console.log(line);
  else console.error(line);
}
