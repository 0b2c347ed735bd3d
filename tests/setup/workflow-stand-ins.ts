// Stand-ins for the services behind the workflows, served by the same loopback server as the others
// (tests/setup/stand-ins.ts):
//   Inngest     POST /e/<event key>      events, deduplicated by id within the run like Inngest does
//               POST /fn/register        a sync (PUT /api/workflows) with every function
//   Gmail       /gmail/v1/users/me/{watch,history,messages,messages/<id>}  per mailbox, keyed by the
//               Google account ("sub") the OAuth stand-in issued the access token for
//   Google JWKS GET /google/jwks          the key that signs Pub/Sub push tokens
// Control: GET /__inngest/events?name=, GET /__inngest/registrations, POST /__gmail/mailbox,
// POST /__gmail/deliver, GET /__gmail/requests?sub=, POST /__jwt (claims → a signed token).
import type { IncomingMessage, ServerResponse } from "node:http";
import { exportJWK, generateKeyPair, SignJWT, type JWK } from "jose";
import { json } from "./http";

interface StoredEvent {
  id?: string;
  /** How many times an event with this id was sent (Inngest keeps the first). */
  deliveries: number;
  name: string;
  data: Record<string, unknown>;
  ts?: number;
  eventKey: string;
}

interface GmailMessage {
  id: string;
  threadId?: string;
  from: string;
  subject: string;
  snippet?: string;
  internalDate?: number;
}

interface Mailbox {
  historyId: number;
  /** History ids below this are "too old" (Gmail answers 404). */
  oldestHistoryId: number;
  messages: Array<GmailMessage & { historyId: number }>;
  /** Access tokens Gmail refuses with 401 (expired or revoked). */
  rejectedTokens: string[];
  /** Answer the next N API calls with this status. */
  failures: Array<{ status: number; times: number }>;
}

export async function workflowStandIns() {
  const events: StoredEvent[] = [];
  const registrations: unknown[] = [];
  const mailboxes = new Map<string, Mailbox>();
  const gmailRequests: Array<{ sub: string; method: string; path: string; token: string }> = [];
  const { publicKey, privateKey } = await generateKeyPair("RS256");
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: "stand-in-key", alg: "RS256", use: "sig" };

  /** Handles the request if it is one of ours; false otherwise. */
  return async function handle(url: URL, req: IncomingMessage, body: string, res: ServerResponse): Promise<boolean> {
    const path = url.pathname;
    const sendEvent = /^\/e\/([^/]+)$/.exec(path);
    if (sendEvent && req.method === "POST") {
      const batch = JSON.parse(body) as Array<Omit<StoredEvent, "eventKey" | "deliveries">>;
      const ids: string[] = [];
      for (const event of Array.isArray(batch) ? batch : [batch]) {
        const id = event.id ?? crypto.randomUUID();
        ids.push(id);
        const seen = event.id ? events.find((e) => e.id === event.id) : undefined;
        if (seen)
          seen.deliveries++; // Inngest drops a repeated id
        else events.push({ ...event, deliveries: 1, eventKey: decodeURIComponent(sendEvent[1]!) });
      }
      json(res, 200, { ids, status: 200 });
      return true;
    }
    if (path === "/fn/register" && req.method === "POST") {
      registrations.push({ body: JSON.parse(body), authorization: req.headers.authorization ?? null, at: Date.now() });
      json(res, 200, { ok: true, modified: true });
      return true;
    }
    if (path === "/__inngest/events") {
      const name = url.searchParams.get("name");
      json(
        res,
        200,
        events.filter((e) => !name || e.name === name),
      );
      return true;
    }
    if (path === "/__inngest/registrations") {
      json(res, 200, registrations);
      return true;
    }

    if (path === "/google/jwks") {
      json(res, 200, { keys: [jwk] });
      return true;
    }
    if (path === "/__jwt" && req.method === "POST") {
      const claims = JSON.parse(body) as Record<string, unknown> & { expiresIn?: string };
      const { expiresIn, ...payload } = claims;
      const token = await new SignJWT(payload)
        .setProtectedHeader({ alg: "RS256", kid: jwk.kid! })
        .setIssuedAt()
        .setExpirationTime(expiresIn ?? "1h")
        .sign(privateKey);
      json(res, 200, { token });
      return true;
    }

    if (path === "/__gmail/mailbox" && req.method === "POST") {
      const setup = JSON.parse(body) as {
        sub: string;
        historyId?: number;
        oldestHistoryId?: number;
        messages?: GmailMessage[];
        rejectTokens?: string[];
        fail?: { status: number; times: number };
      };
      const box = mailboxes.get(setup.sub) ?? { historyId: 1000, oldestHistoryId: 0, messages: [], rejectedTokens: [], failures: [] };
      if (setup.historyId !== undefined) box.historyId = setup.historyId;
      if (setup.oldestHistoryId !== undefined) box.oldestHistoryId = setup.oldestHistoryId;
      for (const message of setup.messages ?? []) box.messages.push({ ...message, historyId: ++box.historyId });
      box.rejectedTokens.push(...(setup.rejectTokens ?? []));
      if (setup.fail) box.failures.push({ ...setup.fail });
      mailboxes.set(setup.sub, box);
      json(res, 200, { historyId: String(box.historyId) });
      return true;
    }
    if (path === "/__gmail/requests") {
      const sub = url.searchParams.get("sub");
      json(
        res,
        200,
        gmailRequests.filter((r) => !sub || r.sub === sub),
      );
      return true;
    }
    if (path.startsWith("/gmail/v1/users/me/")) {
      gmail(path.slice("/gmail/v1/users/me".length), url, req, body, res);
      return true;
    }
    return false;
  };

  function gmail(path: string, url: URL, req: IncomingMessage, body: string, res: ServerResponse) {
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "";
    // Tokens from the OAuth stand-in: ya29.access-<sub> and ya29.refreshed-<sub>.
    const sub = /^ya29\.(?:access|refreshed)-(.+)$/.exec(token)?.[1] ?? "";
    gmailRequests.push({ sub, method: req.method ?? "GET", path: `${path}${url.search}`, token });
    const box = mailboxes.get(sub);
    if (!box || box.rejectedTokens.includes(token)) return json(res, 401, { error: { code: 401, message: "Invalid Credentials" } });
    const failure = box.failures.find((f) => f.times > 0);
    if (failure) {
      failure.times--;
      return json(res, failure.status, { error: { code: failure.status, message: "stand-in failure" } });
    }
    if (path === "/watch" && req.method === "POST") {
      const { topicName } = JSON.parse(body) as { topicName?: string };
      if (!topicName) return json(res, 400, { error: { code: 400, message: "topicName required" } });
      return json(res, 200, { historyId: String(box.historyId), expiration: String(Date.now() + 7 * 86_400_000) });
    }
    if (path === "/history") {
      const start = Number(url.searchParams.get("startHistoryId"));
      if (!Number.isFinite(start) || start < box.oldestHistoryId)
        return json(res, 404, { error: { code: 404, message: "Requested entity was not found." } });
      const added = box.messages.filter((m) => m.historyId > start);
      const history = added.map((m) => ({
        id: String(m.historyId),
        messagesAdded: [{ message: { id: m.id, threadId: m.threadId ?? m.id, labelIds: ["INBOX"] } }],
      }));
      return json(res, 200, { ...(history.length ? { history } : {}), historyId: String(box.historyId) });
    }
    if (path === "/messages") {
      const max = Number(url.searchParams.get("maxResults") ?? 100);
      const newest = [...box.messages].reverse().slice(0, max);
      return json(res, 200, {
        messages: newest.map((m) => ({ id: m.id, threadId: m.threadId ?? m.id })),
        resultSizeEstimate: newest.length,
      });
    }
    const one = /^\/messages\/([^/]+)$/.exec(path);
    if (one) {
      const message = box.messages.find((m) => m.id === decodeURIComponent(one[1]!));
      if (!message) return json(res, 404, { error: { code: 404, message: "Requested entity was not found." } });
      return json(res, 200, {
        id: message.id,
        threadId: message.threadId ?? message.id,
        labelIds: ["INBOX"],
        snippet: message.snippet ?? "",
        historyId: String(message.historyId),
        internalDate: String(message.internalDate ?? Date.now()),
        payload: {
          headers: [
            { name: "From", value: message.from },
            { name: "Subject", value: message.subject },
          ],
        },
      });
    }
    json(res, 404, { error: { code: 404, message: "no such Gmail stand-in route" } });
  }
}
