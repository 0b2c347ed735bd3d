// What a deleted account leaves outside Soma's own storage, asked to go too: the Google grant
// (Gmail's push stopped with users.stop, then the grant revoked), the person's Langfuse traces, and
// their PostHog person with its events. Each call is best effort with a deadline: it runs after the
// rows and the agent are gone (DELETE /api/account hands it to waitUntil), so a slow or failing
// service never keeps anything of the person in Postgres. What each service said is logged once.
// Settings (platform/config.ts): GOOGLE_REVOKE_URL, POSTHOG_PERSONAL_API_KEY, POSTHOG_PROJECT_ID,
// POSTHOG_APP_HOST.
import { OAuth2Client } from "arctic";
import { z } from "zod";
import { withDeadline } from "../../platform/deadline";
import type { Database } from "../../db/database";
import { openConnection } from "../../db/repositories/connections";
import { TokenCipher } from "../../db/token-cipher";
import type { Config } from "../../platform/config";
import { GmailClient, revokeGoogleToken } from "./google/gmail-client";
import { describeError, logJson } from "../../platform/log";
import { POSTHOG_EU_HOST } from "../../platform/telemetry/sinks";

/** The whole erasure's deadline: inside the ~30 s a Worker's waitUntil may run after the response. */
const ERASURE_DEADLINE_MS = 20_000;
/** One outside request's deadline. */
const CALL_DEADLINE_MS = 5_000;
/** Langfuse trace ids listed per page, and pages at most (a person with more is logged as partial). */
const LANGFUSE_PAGE = 100;
const LANGFUSE_MAX_PAGES = 20;

/** What one service said: done, nothing to do, or why not. */
type ErasureOutcome = string;
export interface ErasureReport {
  google: ErasureOutcome;
  langfuse: ErasureOutcome;
  posthog: ErasureOutcome;
}

interface GoogleGrant {
  accessToken: string;
  refreshToken: string | null;
}

/**
 * Reads, while the person's rows still exist, what the erasure needs of them (their Google grant,
 * opened), and returns the erasure to run once the rows are gone. Never throws: a grant that cannot be
 * read is reported, not a reason to keep the account.
 */
export async function prepareOutsideErasure(
  config: Config,
  db: Database,
  userId: string,
): Promise<(deadlineMs?: number) => Promise<ErasureReport>> {
  const settings = readSettings(config);
  const grant = await openGoogleGrant(config, db, userId).catch((error: unknown) => `unreadable: ${describeError(error)}`);
  return async (deadlineMs = ERASURE_DEADLINE_MS) => {
    const settle = (what: string, work: (signal: AbortSignal) => Promise<ErasureOutcome>) =>
      withDeadline(work, deadlineMs, what).catch((error: unknown) => `failed: ${describeError(error)}`);
    const [google, langfuse, posthog] = await Promise.all([
      typeof grant === "string" ? grant : settle("google", (signal) => releaseGoogleGrant(config, settings.revokeUrl, grant, signal)),
      settle("langfuse", (signal) => deleteLangfuseTraces(config, userId, signal)),
      settle("posthog", (signal) => deletePosthogPerson(settings.posthog, userId, signal)),
    ]);
    const report = { google, langfuse, posthog };
    const failed = Object.values(report).some((outcome) => /^(failed|unreadable)/.test(outcome));
    logJson(failed ? "warn" : "info", { erasure: "outside services", userId, ...report });
    return report;
  };
}

function readSettings(config: Config) {
  const { POSTHOG_PERSONAL_API_KEY: key, POSTHOG_PROJECT_ID: project } = config;
  return {
    revokeUrl: config.GOOGLE_REVOKE_URL ?? new URL("revoke", config.GOOGLE_TOKEN_URL).toString(),
    posthog:
      key && project
        ? {
            key,
            project,
            host: config.POSTHOG_APP_HOST ?? (config.POSTHOG_HOST ?? POSTHOG_EU_HOST).replace(".i.posthog.com", ".posthog.com"),
          }
        : null,
  };
}

async function openGoogleGrant(config: Config, db: Database, userId: string): Promise<GoogleGrant | null> {
  if (!config.TOKEN_ENCRYPTION_KEY) throw new Error("TOKEN_ENCRYPTION_KEY is not set");
  const cipher = new TokenCipher(config.TOKEN_ENCRYPTION_KEY);
  const opened = await db.withUser(userId, (tx) => openConnection(tx, userId, "google", cipher));
  if (!opened?.tokens.accessToken) return null;
  return { accessToken: opened.tokens.accessToken, refreshToken: opened.tokens.refreshToken };
}

/** Stops the mailbox's push notifications, then revokes the grant (which also ends its access tokens). */
async function releaseGoogleGrant(
  config: Config,
  revokeUrl: string,
  grant: GoogleGrant | null,
  signal: AbortSignal,
): Promise<ErasureOutcome> {
  if (!grant) return "not connected";
  const { GOOGLE_CLIENT_ID: id, GOOGLE_CLIENT_SECRET: secret } = config;
  const gmail = new GmailClient(async (refresh) => {
    if (!refresh || !grant.refreshToken || !id || !secret) return grant.accessToken;
    const tokens = await withDeadline(
      new OAuth2Client(id, secret, null).refreshAccessToken(config.GOOGLE_TOKEN_URL, grant.refreshToken, []),
      CALL_DEADLINE_MS,
      "google token",
    );
    return tokens.accessToken();
  }, config.GMAIL_API_URL);
  const stopped = await gmail.stop(callSignal(signal)).then(
    () => "watch stopped",
    (error: unknown) => `watch not stopped (${describeError(error)})`,
  );
  const revoked = await revokeGoogleToken(revokeUrl, grant.refreshToken ?? grant.accessToken, callSignal(signal));
  return `${stopped}; grant ${revoked}`;
}

/** Lists the person's traces by their user id (every turn and workflow trace carries it) and deletes them. */
async function deleteLangfuseTraces(config: Config, userId: string, signal: AbortSignal): Promise<ErasureOutcome> {
  if (!config.LANGFUSE_PUBLIC_KEY || !config.LANGFUSE_SECRET_KEY) return "not configured";
  const base = `${(config.LANGFUSE_BASE_URL ?? "https://cloud.langfuse.com").replace(/\/+$/, "")}/api/public/traces`;
  const authorization = `Basic ${btoa(`${config.LANGFUSE_PUBLIC_KEY}:${config.LANGFUSE_SECRET_KEY}`)}`;
  const TraceList = z.object({
    data: z.array(z.object({ id: z.string() })),
    meta: z.object({ totalPages: z.number() }).partial().optional(),
  });
  const ids: string[] = [];
  let pages = 0;
  for (let page = 1; page <= LANGFUSE_MAX_PAGES; page++) {
    const query = new URLSearchParams({ userId, limit: String(LANGFUSE_PAGE), page: String(page), fields: "core" });
    const list = TraceList.parse(await requestJson(`${base}?${query}`, { headers: { authorization }, signal: callSignal(signal) }));
    ids.push(...list.data.map((trace) => trace.id));
    pages = list.meta?.totalPages ?? page;
    if (list.data.length < LANGFUSE_PAGE || page >= pages) break;
  }
  for (let i = 0; i < ids.length; i += LANGFUSE_PAGE) {
    await requestJson(base, {
      method: "DELETE",
      headers: { authorization, "content-type": "application/json" },
      body: JSON.stringify({ traceIds: ids.slice(i, i + LANGFUSE_PAGE) }),
      signal: callSignal(signal),
    });
  }
  return pages > LANGFUSE_MAX_PAGES ? `deleted ${ids.length} traces, more remain` : `deleted ${ids.length} traces`;
}

/** PostHog's bulk person deletion by distinct id (the person's users.id), their events queued for deletion too. */
async function deletePosthogPerson(
  posthog: { key: string; project: string; host: string } | null,
  userId: string,
  signal: AbortSignal,
): Promise<ErasureOutcome> {
  if (!posthog) return "not configured (POSTHOG_PERSONAL_API_KEY, POSTHOG_PROJECT_ID)";
  const url = `${posthog.host.replace(/\/+$/, "")}/api/projects/${posthog.project}/persons/bulk_delete/`;
  const answer = z.looseObject({ persons_deleted: z.number().optional() }).parse(
    await requestJson(url, {
      method: "POST",
      headers: { authorization: `Bearer ${posthog.key}`, "content-type": "application/json" },
      body: JSON.stringify({ distinct_ids: [userId], delete_events: true }),
      signal: callSignal(signal),
    }),
  );
  return `person deleted (${answer.persons_deleted ?? 0}), events queued for deletion`;
}

function callSignal(signal: AbortSignal): AbortSignal {
  return AbortSignal.any([signal, AbortSignal.timeout(CALL_DEADLINE_MS)]);
}

async function requestJson(url: string, init: RequestInit): Promise<unknown> {
  const response = await fetch(url, init);
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`${init.method ?? "GET"} ${new URL(url).pathname} answered ${response.status}`);
  }
  const text = await response.text();
  return text ? (JSON.parse(text) as unknown) : {};
}
