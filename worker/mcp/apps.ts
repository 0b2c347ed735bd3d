// The apps a person connected through MCP: one OAuth grant each (worker/mcp/oauth.ts), listed and
// revoked through the provider's helpers. Revoking tells the person's agent, which refuses the grant at
// once wherever a call lands, then deletes the grant and every token of it, so the app's next /mcp
// call is a 401 (KV's edge cache may keep serving a deleted token for about a minute; the agent does not). "Last used" is Soma's own note in OAUTH_KV, written at most once a
// minute per grant and isolate, and removed with the grant.
import type { OAuthHelpers } from "@cloudflare/workers-oauth-provider";
import { agentFor } from "../agent-routing";
import { READ_SCOPE, WRITE_SCOPE } from "./oauth";

const USED_PREFIX = "soma:app-used:";
const USE_NOTE_INTERVAL_MS = 60_000;
/** A note outlives the longest idle grant (30 days of refresh) by a little. */
const USE_NOTE_SECONDS = 40 * 24 * 60 * 60;
const lastNoted = new Map<string, number>();

export interface ConnectedApp {
  id: string;
  clientId: string;
  name: string;
  canRead: boolean;
  canWrite: boolean;
  connectedAt: string;
  lastUsedAt: string | null;
}

/** The grant id inside one of the provider's tokens (`userId:grantId:secret`). */
export function grantOf(token: string): string | null {
  const parts = token.split(":");
  return parts.length === 3 && parts[1] ? parts[1] : null;
}

/** Notes that the grant behind `token` was just used (not awaited: the note must not slow the call). */
export function recordAppUse(env: Env, ctx: ExecutionContext, token: string): void {
  const grantId = grantOf(token);
  if (!grantId) return;
  const now = Date.now();
  if (now - (lastNoted.get(grantId) ?? 0) < USE_NOTE_INTERVAL_MS) return;
  lastNoted.set(grantId, now);
  ctx.waitUntil(env.OAUTH_KV.put(`${USED_PREFIX}${grantId}`, new Date(now).toISOString(), { expirationTtl: USE_NOTE_SECONDS }));
}

/** Every app `userId` connected, newest first. */
export async function listConnectedApps(oauth: OAuthHelpers, env: Env, userId: string): Promise<ConnectedApp[]> {
  const apps: ConnectedApp[] = [];
  let cursor: string | undefined;
  do {
    const page = await oauth.listUserGrants(userId, cursor ? { cursor } : {});
    for (const grant of page.items) {
      const metadata = (grant.metadata ?? {}) as { appName?: unknown };
      apps.push({
        id: grant.id,
        clientId: grant.clientId,
        name: typeof metadata.appName === "string" ? metadata.appName : grant.clientId,
        canRead: grant.scope.includes(READ_SCOPE),
        canWrite: grant.scope.includes(WRITE_SCOPE),
        connectedAt: new Date(grant.createdAt * 1000).toISOString(),
        lastUsedAt: await env.OAUTH_KV.get(`${USED_PREFIX}${grant.id}`),
      });
    }
    cursor = page.cursor;
  } while (cursor);
  return apps.sort((a, b) => b.connectedAt.localeCompare(a.connectedAt));
}

/** Revokes one of `userId`'s apps; false when they have no such grant. */
export async function revokeConnectedApp(oauth: OAuthHelpers, env: Env, userId: string, grantId: string): Promise<boolean> {
  const apps = await listConnectedApps(oauth, env, userId);
  if (!apps.some((app) => app.id === grantId)) return false;
  // The agent first: from now on it refuses the grant's calls wherever they land, even where KV still
  // serves the deleted token from its cache (worker/mcp/server.ts).
  await (await agentFor(env, userId)).disconnectApp(grantId);
  await oauth.revokeGrant(grantId, userId);
  await env.OAUTH_KV.delete(`${USED_PREFIX}${grantId}`);
  lastNoted.delete(grantId);
  return true;
}

/** Revokes every app `userId` connected (account deletion). */
export async function revokeAllApps(oauth: OAuthHelpers, env: Env, userId: string): Promise<void> {
  for (const app of await listConnectedApps(oauth, env, userId)) {
    await oauth.revokeGrant(app.id, userId);
    await env.OAUTH_KV.delete(`${USED_PREFIX}${app.id}`);
  }
}
