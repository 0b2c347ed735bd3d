// A small Gmail API client over fetch (googleapis does not run on Workers): the four calls the mail
// intake needs — users.watch, users.history.list, users.messages.list (the bounded resync) and
// users.messages.get with metadata only (never a body) —, users.stop for a deleted account, and the
// revocation of a Google grant. The access token comes from a provider that refreshes it; a 401
// refreshes once and retries.
import { z } from "zod";

export class GmailError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "GmailError";
  }

  /** Worth retrying later: rate limits and Google's own failures. */
  get transient(): boolean {
    return this.status === 429 || this.status >= 500;
  }
}

/** Returns a valid access token; `refresh` forces a new one (after Gmail answered 401). */
export type AccessTokenProvider = (refresh: boolean) => Promise<string>;

const WatchResponse = z.object({ historyId: z.coerce.string(), expiration: z.coerce.string() });

const HistoryResponse = z.object({
  history: z
    .array(
      z.object({
        id: z.coerce.string(),
        messagesAdded: z.array(z.object({ message: z.object({ id: z.string(), labelIds: z.array(z.string()).optional() }) })).optional(),
      }),
    )
    .optional(),
  nextPageToken: z.string().optional(),
  historyId: z.coerce.string(),
});

const MessageList = z.object({
  messages: z.array(z.object({ id: z.string() })).optional(),
  nextPageToken: z.string().optional(),
});

const MessageMetadata = z.object({
  id: z.string(),
  threadId: z.string().optional(),
  labelIds: z.array(z.string()).optional(),
  snippet: z.string().optional(),
  historyId: z.coerce.string().optional(),
  internalDate: z.coerce.string().optional(),
  payload: z.object({ headers: z.array(z.object({ name: z.string(), value: z.string() })).optional() }).optional(),
});

export type GmailMessageMetadata = z.infer<typeof MessageMetadata>;

export class GmailClient {
  readonly #base: string;

  constructor(
    private readonly token: AccessTokenProvider,
    baseUrl: string,
  ) {
    this.#base = `${baseUrl.replace(/\/$/, "")}/gmail/v1/users/me`;
  }

  /** users.watch: push INBOX changes to the Pub/Sub topic. */
  watch(topicName: string) {
    return this.#call("POST", "/watch", WatchResponse, { topicName, labelIds: ["INBOX"], labelFilterBehavior: "include" });
  }

  /** users.history.list: messages added to INBOX since `startHistoryId` (one page). */
  history(startHistoryId: string, pageToken?: string) {
    const query = new URLSearchParams({ startHistoryId, historyTypes: "messageAdded", labelId: "INBOX", maxResults: "100" });
    if (pageToken) query.set("pageToken", pageToken);
    return this.#call("GET", `/history?${query}`, HistoryResponse);
  }

  /** users.messages.list: the newest INBOX messages (the bounded resync). */
  recentMessages(maxResults: number) {
    const query = new URLSearchParams({ maxResults: String(maxResults), labelIds: "INBOX", q: "newer_than:7d" });
    return this.#call("GET", `/messages?${query}`, MessageList);
  }

  /** users.messages.get, format=metadata: headers and snippet, never the body. */
  message(id: string) {
    const query = new URLSearchParams({ format: "metadata" });
    for (const header of ["From", "Subject", "Date"]) query.append("metadataHeaders", header);
    return this.#call("GET", `/messages/${encodeURIComponent(id)}?${query}`, MessageMetadata);
  }

  /** users.stop: no more push notifications for this mailbox (its answer has no body). */
  async stop(signal?: AbortSignal): Promise<void> {
    await this.#call("POST", "/stop", null, undefined, signal);
  }

  async #call<T>(method: "GET" | "POST", path: string, schema: z.ZodType<T>, body?: unknown, signal?: AbortSignal): Promise<T>;
  async #call(method: "GET" | "POST", path: string, schema: null, body?: unknown, signal?: AbortSignal): Promise<void>;
  async #call<T>(
    method: "GET" | "POST",
    path: string,
    schema: z.ZodType<T> | null,
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<T | undefined> {
    for (let attempt = 0; ; attempt++) {
      const response = await fetch(`${this.#base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${await this.token(attempt > 0)}`,
          ...(body ? { "content-type": "application/json" } : {}),
        },
        ...(body ? { body: JSON.stringify(body) } : {}),
        ...(signal ? { signal } : {}),
      });
      if (response.status === 401 && attempt === 0) {
        await response.body?.cancel();
        continue;
      }
      if (!response.ok) {
        const detail = await response.text().catch(() => "");
        throw new GmailError(response.status, `Gmail ${method} ${path.split("?")[0]} answered ${response.status}: ${detail.slice(0, 200)}`);
      }
      if (schema === null) {
        await response.body?.cancel();
        return;
      }
      const parsed = schema.safeParse(await response.json());
      if (!parsed.success) throw new GmailError(502, `Gmail ${path.split("?")[0]} sent an unexpected shape`);
      return parsed.data;
    }
  }
}

/**
 * Revokes a Google OAuth grant (RFC 7009 at Google's revocation endpoint): revoking the refresh token
 * ends the whole grant, its access tokens included. Google answers 400 for a token it no longer knows,
 * which means the same thing here: nothing is left to revoke.
 */
export async function revokeGoogleToken(revokeUrl: string, token: string, signal?: AbortSignal): Promise<"revoked" | "unknown token"> {
  const response = await fetch(revokeUrl, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ token }).toString(),
    ...(signal ? { signal } : {}),
  });
  await response.body?.cancel();
  if (response.ok) return "revoked";
  if (response.status === 400) return "unknown token";
  throw new GmailError(response.status, `Google's revocation endpoint answered ${response.status}`);
}

/** A header of a metadata message ("From", "Subject", …). */
export function headerOf(message: GmailMessageMetadata, name: string): string | undefined {
  return message.payload?.headers?.find((h) => h.name.toLowerCase() === name.toLowerCase())?.value;
}

/**
 * `"Anna Schmidt" <anna@example.org>` → { name: "Anna Schmidt", email: "anna@example.org" }. Also a
 * quoted name with escaped quotes or angle brackets (`"Acme \"Deals\"" <…>`, `"Acme <Deals>" <…>`),
 * a bare address, and the old `anna@example.org (Anna Schmidt)` form.
 */
export function parseMailbox(value: string | undefined): { name: string | null; email: string } | null {
  if (!value) return null;
  // name-addr: the address is the last <…>; whatever precedes it is the display name.
  const angle = /^([\s\S]*)<\s*([^<>\s@]+@[^<>\s@]+)\s*>\s*$/.exec(value);
  if (angle?.[2]) return { name: displayName(angle[1] ?? ""), email: angle[2].toLowerCase() };
  const bare = /^\s*([^<>()\s@]+@[^<>()\s@]+)\s*(?:\(([^()]*)\))?\s*$/.exec(value);
  return bare?.[1] ? { name: bare[2]?.trim() || null, email: bare[1].toLowerCase() } : null;
}

function displayName(raw: string): string | null {
  let name = raw.trim();
  if (name.length >= 2 && name.startsWith('"') && name.endsWith('"')) name = name.slice(1, -1).replace(/\\(.)/g, "$1").trim();
  return name || null;
}
