// POST /api/webhooks/mail?token=…: Gmail notifications pushed by Pub/Sub. Checks, in order, each
// before any work of the next: the token (constant time, 401) → the push's OIDC token when
// PUBSUB_PUSH_AUDIENCE is set (signature, audience, issuer, service account; 401) → size (413) →
// JSON (400/415) → the Pub/Sub envelope (400). Then the message itself: data that does not decode to
// {emailAddress, historyId}, or a mailbox nobody connected, is acknowledged (204) and logged — Pub/Sub
// would redeliver anything else forever. A valid notification becomes `mail/notification.received`
// with the Pub/Sub message id as event id (a redelivery is the same event) → 204. Only failing to hand
// it to Inngest answers 503, so that Pub/Sub tries again and nothing is lost.
//
// Why two credentials (issue 25, item 10). The query token is the spec's ("guarded by the `token`
// query parameter"; its acceptance tests POST with ?token= and expect 401 without it), so it stays
// required everywhere. But a long-lived secret in a URL is written wherever URLs are: Pub/Sub's
// subscription config, proxies, and our own logs. So:
//   - Our logs never hold it: wrangler.toml's [observability] redacts the query string of every
//     request URL in Workers Logs and traces and writes no invocation logs; the Worker's own request
//     line names the route pattern, never the path or query (worker/app.ts); Sentry gets the URL
//     without its query and no query_string (platform/telemetry/sentry.ts); and every sink's payload
//     passes scrubSecrets, which masks MAIL_PUSH_TOKEN's value and any ?token= (telemetry/scrub.ts).
//     Langfuse, Axiom and PostHog get no request URL at all. tests/worker/mail-intake.test.ts checks
//     Sentry, Axiom and the console lines of this route.
//   - A leaked query token alone opens nothing in production, where PUBSUB_PUSH_AUDIENCE and
//     PUBSUB_PUSH_SERVICE_ACCOUNT are set (docs/runbook.md; npm run secrets:check warns without them):
//     each push must also carry Google's short-lived OIDC token (an hour), signed with Google's keys,
//     for this audience and that service account, which no one without the account can mint. The query
//     token then only keeps the spec's contract. Without an audience (local runs, the spec's
//     acceptance setup) the query token is the only guard, as the spec defines it.
import { Hono, type Context } from "hono";
import { createRemoteJWKSet, jwtVerify } from "jose";
import { z } from "zod";
import { mailboxOwner } from "../../db/repositories/connections";
import type { Config } from "../../platform/config";
import { describeError, logJson } from "../../platform/log";
import { canSendEvents, inngestClient, SEND_DEADLINE_MS } from "../../agents/workflows/client";
import { mailNotificationReceived } from "../../agents/workflows/events";
import { secretsEqual } from "../auth/secrets";
import { limitBody } from "../body-limit";
import { withDeadline } from "../../platform/deadline";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";
import { readJson } from "../validation";

const MAX_PUSH_BYTES = 64 * 1024;
const GOOGLE_ISSUERS = ["https://accounts.google.com", "accounts.google.com"];

const Envelope = z.object({
  message: z
    .object({
      data: z
        .string()
        .max(48 * 1024)
        .optional(),
      messageId: z.string().min(1).max(200).optional(),
      message_id: z.string().min(1).max(200).optional(),
      publishTime: z.string().optional(),
      attributes: z.record(z.string(), z.string()).optional(),
    })
    .refine((m) => m.messageId ?? m.message_id, "message.messageId is required"),
  subscription: z.string().max(500).optional(),
});

const GmailNotification = z.object({
  emailAddress: z.email(),
  historyId: z.union([z.string().regex(/^\d{1,20}$/), z.number().int().nonnegative()]).transform(String),
});

// One key set per JWKS address and isolate: jose caches Google's keys and refetches on rotation.
const keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

async function verifyPushToken(c: Context<AppEnv>, config: Config & { PUBSUB_PUSH_AUDIENCE: string }): Promise<void> {
  const token = /^Bearer (\S+)$/.exec(c.req.header("authorization") ?? "")?.[1];
  if (!token) throw new ApiError("unauthorized", "The push carries no OIDC token.");
  let keys = keySets.get(config.GOOGLE_JWKS_URL);
  if (!keys) {
    keys = createRemoteJWKSet(new URL(config.GOOGLE_JWKS_URL));
    keySets.set(config.GOOGLE_JWKS_URL, keys);
  }
  try {
    const { payload } = await jwtVerify(token, keys, { audience: config.PUBSUB_PUSH_AUDIENCE, issuer: GOOGLE_ISSUERS });
    const expected = config.PUBSUB_PUSH_SERVICE_ACCOUNT;
    if (expected && (payload.email !== expected || payload.email_verified !== true)) throw new Error("unexpected service account");
  } catch (error) {
    logJson("warn", { route: "mail", requestId: c.var.requestId, push: "rejected token", error: describeError(error) });
    throw new ApiError("unauthorized", "The push's OIDC token is not valid for this endpoint.");
  }
}

export const mail = new Hono<AppEnv>().post(
  "/",
  async (c, next) => {
    const config = c.var.config;
    if (!config.MAIL_PUSH_TOKEN || !(await secretsEqual(c.req.query("token"), config.MAIL_PUSH_TOKEN))) {
      throw new ApiError("unauthorized", "Wrong or missing token.");
    }
    if (config.PUBSUB_PUSH_AUDIENCE) await verifyPushToken(c, { ...config, PUBSUB_PUSH_AUDIENCE: config.PUBSUB_PUSH_AUDIENCE });
    await next();
  },
  limitBody(MAX_PUSH_BYTES),
  async (c) => {
    const envelope = await readJson(c, Envelope);
    const messageId = (envelope.message.messageId ?? envelope.message.message_id)!;
    const log = (outcome: string, fields: Record<string, unknown> = {}) =>
      logJson("info", { route: "mail", requestId: c.var.requestId, pubsubMessageId: messageId, outcome, ...fields });

    const notification = GmailNotification.safeParse(decodeData(envelope.message.data));
    if (!notification.success) {
      log("ignored: data is not a Gmail notification");
      return c.body(null, 204);
    }
    const { emailAddress, historyId } = notification.data;
    const userId = await c.var.db.withSystem((tx) => mailboxOwner(tx, emailAddress));
    if (!userId) {
      log("ignored: no connected mailbox");
      return c.body(null, 204);
    }
    const config = c.var.config;
    if (!canSendEvents(config)) throw new ApiError("unavailable", "Workflows are not configured (INNGEST_EVENT_KEY); Pub/Sub will retry.");
    try {
      // Bounded like every outside call: past the deadline Pub/Sub redelivers (the event id dedupes).
      await withDeadline(
        inngestClient(config).send(mailNotificationReceived.create({ userId, historyId }, { id: `gmail-push-${messageId}` })),
        SEND_DEADLINE_MS,
        "inngest",
      );
    } catch (error) {
      logJson("error", { route: "mail", requestId: c.var.requestId, pubsubMessageId: messageId, workflows: describeError(error) });
      throw new ApiError("unavailable", "Could not hand the notification to the workflow engine; Pub/Sub will retry.");
    }
    log("sent", { userId, historyId });
    return c.body(null, 204);
  },
);

/** Pub/Sub's base64 `data` as JSON, or undefined. */
function decodeData(data: string | undefined): unknown {
  if (!data) return undefined;
  try {
    const bytes = Uint8Array.from(atob(data), (ch) => ch.charCodeAt(0));
    return JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
  } catch {
    return undefined;
  }
}
