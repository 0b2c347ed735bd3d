// One list of error codes, one JSON shape: {error: {code, message, requestId}}. Handlers throw
// ApiError; app.onError turns every throw into that shape. A 5xx is only for real faults.
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ConfigError, loadConfig, type Config } from "../platform/config";
import { AccountDeletedError } from "../db/repositories/auth";
import { reportError } from "../platform/telemetry/sentry";
import type { AppEnv } from "./types";
import { describeError, logJson } from "../platform/log";

export const ERROR_STATUS = {
  bad_request: 400,
  invalid_json: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
  config_invalid: 500,
  unavailable: 503,
} as const satisfies Record<string, ContentfulStatusCode>;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "ApiError";
  }

  get status(): ContentfulStatusCode {
    return ERROR_STATUS[this.code];
  }
}

export interface ErrorBody {
  error: { code: ErrorCode; message: string; requestId: string };
}

/** The JSON error response for `error`, whatever was thrown. */
export function errorResponse(c: Context<AppEnv>, error: unknown): Response {
  const apiError = toApiError(error);
  if (apiError.status >= 500) {
    logJson("error", { requestId: requestIdOf(c), error: describeError(error) });
    report(c, error);
  }
  const body: ErrorBody = { error: { code: apiError.code, message: apiError.message, requestId: requestIdOf(c) } };
  return c.json(body, apiError.status, apiError.headers);
}

function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof ConfigError) return new ApiError("config_invalid", error.message);
  if (error instanceof AccountDeletedError) return new ApiError("forbidden", error.message);
  if (error instanceof HTTPException) {
    const byStatus = Object.entries(ERROR_STATUS).find(([, status]) => status === error.status);
    const code = (byStatus?.[0] as ErrorCode | undefined) ?? (error.status < 500 ? "bad_request" : "internal");
    return new ApiError(code, error.message || code.replaceAll("_", " "));
  }
  return new ApiError("internal", "Something went wrong on our side. It has been logged.");
}

/** A real fault → Sentry (when configured), with what identifies the request but nothing it carried. */
function report(c: Context<AppEnv>, error: unknown): void {
  let config: Config;
  try {
    config = c.var.config ?? loadConfig(c.env);
  } catch {
    return; // the configuration itself is broken: the log line above is all there is
  }
  reportError(config, error, {
    waitUntil: (p) => c.executionCtx.waitUntil(p),
    request: c.req.raw,
    requestId: requestIdOf(c),
    route: c.req.routePath,
    ...(c.env.CF_VERSION_METADATA?.id ? { release: c.env.CF_VERSION_METADATA.id } : {}),
    ...(c.var.person ? { userId: c.var.person.id } : {}),
  });
}

function requestIdOf(c: Context): string {
  return (c.get("requestId") as string | undefined) ?? "unknown";
}
