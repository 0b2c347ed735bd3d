// Unhandled errors to Sentry (an EU-region project's DSN) through toucan-js: the request id, the route
// pattern and the release (the Worker version id) as tags; no cookies, no query string (the mail
// intake's token lives there), no request body, no IP, only a few harmless headers; every configured
// secret scrubbed from the event. Without SENTRY_DSN nothing happens.
import { Toucan } from "toucan-js";
import type { Config } from "../config";
import { scrubSecrets } from "./scrub";

const SAFE_HEADERS = ["user-agent", "content-type", "content-length", "cf-ray", "x-request-id"];

export interface ErrorContext {
  waitUntil(promise: Promise<unknown>): void;
  request?: Request;
  requestId?: string;
  route?: string;
  /** The Worker version serving (CF_VERSION_METADATA.id). */
  release?: string;
  userId?: string;
}

export function reportError(config: Config, error: unknown, context: ErrorContext): void {
  if (!config.SENTRY_DSN) return;
  const sentry = new Toucan({
    dsn: config.SENTRY_DSN,
    context: { waitUntil: (p: Promise<unknown>) => context.waitUntil(p) },
    ...(context.request ? { request: context.request } : {}),
    ...(context.release ? { release: context.release } : {}),
    environment: config.ENVIRONMENT,
    requestDataOptions: { allowedHeaders: SAFE_HEADERS, allowedCookies: false, allowedSearchParams: false, allowedIps: false },
    beforeSend: (event) => {
      if (event.request) {
        delete event.request.data;
        delete event.request.cookies;
        delete event.request.query_string;
        if (event.request.url) event.request.url = event.request.url.split("?")[0];
      }
      return scrubSecrets(event, config);
    },
  });
  if (context.requestId) sentry.setTag("requestId", context.requestId);
  if (context.route) sentry.setTag("route", context.route);
  if (context.userId) sentry.setUser({ id: context.userId });
  sentry.captureException(error);
}
