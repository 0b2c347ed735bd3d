// Is a failure an outage (wait it out and try again) or something trying again will not fix (give up
// after a few attempts and keep the input aside)? One answer for the webhook and for the inbox.
//
// Transient: a dependency that did not answer in time or could not be reached — Postgres (refused,
// reset, closed, shutting down, statement_timeout, serialization conflicts), the model (network errors,
// 408/429/5xx, a turn that ran out of time), the Bot API (network errors, 429, 5xx), any DeadlineError.
// Everything else (a bug, a constraint violation, a 4xx the request itself caused) is permanent.
import { GrammyError, HttpError } from "grammy";

export type FailureKind = "transient" | "permanent";

/** Node and workerd socket error codes of a connection that could not be made or was lost. */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  // postgres.js
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
]);

/** SQLSTATEs of a server that is going away, overloaded, or asking for a retry. */
function transientSqlState(code: string): boolean {
  return (
    code.startsWith("08") || // connection exception
    code.startsWith("53") || // insufficient resources
    code === "57014" || // query_canceled (statement_timeout)
    code.startsWith("57P") || // admin/crash shutdown, cannot connect now
    code === "40001" || // serialization_failure
    code === "40P01" // deadlock_detected
  );
}

/** Messages of workerd's sockets and fetch when the other side is gone. */
const NETWORK_MESSAGE =
  /network connection lost|connection (refused|reset|closed)|socket hang up|stream was cancelled|fetch failed|proxy request failed|timed? ?out|econnrefused|econnreset/i;

/** An outside HTTP service answered with an error status (a speech server, Telegram's file server):
 * overloaded or down (429, 5xx) is an outage, anything else is final. */
export class UpstreamHttpError extends Error {
  constructor(
    readonly what: string,
    readonly statusCode: number,
    detail = "",
  ) {
    super(`${what} answered ${statusCode}${detail ? `: ${detail}` : ""}`);
    this.name = "UpstreamHttpError";
  }
}

export function classifyFailure(error: unknown, depth = 0): FailureKind {
  if (depth > 4 || error === null || typeof error !== "object") return "permanent";
  const e = error as {
    name?: string;
    code?: unknown;
    message?: string;
    cause?: unknown;
    isRetryable?: boolean;
    statusCode?: number;
    lastError?: unknown;
    error?: unknown;
  };
  if (e.name === "DeadlineError" || e.name === "TimeoutError" || e.name === "AbortError") return "transient";
  if (error instanceof GrammyError) return error.error_code === 429 || error.error_code >= 500 ? "transient" : "permanent";
  if (error instanceof HttpError) return "transient";
  if (typeof e.code === "string") {
    if (NETWORK_CODES.has(e.code)) return "transient";
    if (/^[0-9A-Z]{5}$/.test(e.code)) return transientSqlState(e.code) ? "transient" : "permanent";
  }
  // The AI SDK: APICallError knows whether it is worth retrying (network, 408, 409, 429, 5xx).
  if (e.name === "AI_APICallError") return e.isRetryable ? "transient" : "permanent";
  if (e.name === "AI_RetryError" && e.lastError) return classifyFailure(e.lastError, depth + 1);
  if (error instanceof UpstreamHttpError) return error.statusCode === 429 || error.statusCode >= 500 ? "transient" : "permanent";
  if (typeof e.message === "string" && NETWORK_MESSAGE.test(e.message)) return "transient";
  // Wrapped errors: grammY's BotError (.error), standard .cause.
  for (const inner of [e.cause, e.error])
    if (inner && inner !== error && classifyFailure(inner, depth + 1) === "transient") return "transient";
  return "permanent";
}
