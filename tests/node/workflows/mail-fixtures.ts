// What the mail-ingest tests share: unique Gmail accounts and message ids, notifications, and the rows
// and connection a run leaves behind, read as the person sees them (RLS).
import { sql } from "drizzle-orm";
import { gmailRequests, standInUrl, testDb } from "./harness";

export function newSub(tag = "mail") {
  return `${tag}-${crypto.randomUUID().slice(0, 8)}`;
}

export function notification(userId: string, sub: string, historyId: string, id = `gmail-push-${crypto.randomUUID()}`) {
  return { name: "mail/notification.received", id, data: { userId, emailAddress: `${sub}@gmail.example`, historyId } } as const;
}

export function message(id: string, from: string, subject: string, extra: { snippet?: string; internalDate?: number } = {}) {
  return { id, from, subject, ...extra };
}

/** Unique message ids (sources are unique per person, but distinct ids keep failures readable). */
export function messageId(label: string) {
  return `${label}-${crypto.randomUUID().slice(0, 8)}`;
}

export interface Rows {
  sources: Array<{
    id: string;
    user_id: string;
    kind: string;
    external_id: string;
    payload: { from: { name: string | null; email: string }; subject: string; threadId: string | null; text: string };
  }>;
  people: Array<{ id: string; name: string; properties: { email?: string }; source_id: string | null }>;
  events: Array<{
    kind: string;
    entity_ids: string[];
    source_id: string | null;
    occurred_ms: number;
    payload: { subject: string; messageId: string; snippet: string; from: { name: string | null; email: string } };
  }>;
}

/** Everything mail-ingest writes, as `userId` sees it (RLS). */
export async function rowsOf(userId: string): Promise<Rows> {
  return testDb().withUser(userId, async (tx) => ({
    sources: (await tx.execute(
      sql`select id, user_id, kind, external_id, payload from sources order by external_id`,
    )) as unknown as Rows["sources"],
    people: (await tx.execute(
      sql`select id, name, properties, source_id from entities where type = 'person' order by name`,
    )) as unknown as Rows["people"],
    events: (await tx.execute(
      sql`select kind, array_to_json(entity_ids) as entity_ids, source_id, (extract(epoch from occurred_at) * 1000)::float8 as occurred_ms, payload from events where kind = 'email_received' order by payload->>'messageId'`,
    )) as unknown as Rows["events"],
  }));
}

export interface ConnectionRow {
  gmail_history_id: string | null;
  access_token_enc: string;
  refresh_token_enc: string | null;
  expires_ms: number | null;
  watching: boolean;
}

export async function connectionOf(userId: string): Promise<ConnectionRow | undefined> {
  const rows = await testDb().withUser(
    userId,
    (tx) =>
      tx.execute(
        sql`select gmail_history_id, access_token_enc, refresh_token_enc, (extract(epoch from access_token_expires_at) * 1000)::float8 as expires_ms,
                    watch_expires_at is not null as watching from oauth_connections where provider = 'google'`,
      ) as unknown as Promise<ConnectionRow[]>,
  );
  return rows[0];
}

/** Refresh-token grants the Google token endpoint stand-in received for account `sub`. */
export async function refreshGrants(sub: string): Promise<Array<Record<string, string>>> {
  const all = (await (await fetch(`${standInUrl}/__google`)).json()) as Array<Record<string, string>>;
  return all.filter((r) => r.grant_type === "refresh_token" && r.refresh_token === `1//refresh-${sub}`);
}

/**
 * The Gmail API requests the stand-in saw for `sub`, in order, without users.watch: mail-ingest never
 * watches, but a renewal of every mailbox (npm run mail:watch's test) may run in parallel.
 */
export async function ingestRequests(sub: string): Promise<Array<{ method: string; path: string; token: string }>> {
  return (await gmailRequests(sub)).filter((r) => r.path !== "/watch");
}

/** The same, as "METHOD /path" without the query. */
export async function gmailPaths(sub: string): Promise<string[]> {
  return (await ingestRequests(sub)).map((r) => `${r.method} ${r.path.split("?")[0]}`);
}
