// The OAuth provider's upkeep, run by the Worker's hourly Cron Trigger (wrangler.toml, worker/index.ts):
//   - purgeExpiredData(): expired and orphaned grants and tokens leave KV (KV's own expiry is the first
//     line; this catches what it misses and what a cut-short revocation left), a batch per run, the
//     sweep resumed from the cursor the previous run kept;
//   - registrations no one ever connected: dynamic registration is open to anyone, so a client that no
//     person allowed within a day of registering is deleted (a connected one is marked on consent,
//     worker/routes/authorize.ts). Also a batch per run, resumed from a cursor.
import type { PurgeResult } from "@cloudflare/workers-oauth-provider";
import { oauthApi } from "./oauth";

const PURGE_CURSOR = "soma:upkeep:purge-cursor";
const CLIENTS_CURSOR = "soma:upkeep:clients-cursor";
const CONNECTED_PREFIX = "soma:client-connected:";
/** How long a registration may wait for its first consent. */
export const UNUSED_CLIENT_MS = 24 * 60 * 60 * 1000;
const CLIENTS_PER_RUN = 50;

export interface UpkeepResult {
  purge: PurgeResult;
  clientsChecked: number;
  clientsDeleted: number;
}

/** Marks `clientId` as connected by a person: it is never removed as unused. */
export async function markClientConnected(env: Env, clientId: string): Promise<void> {
  // Client ID metadata document clients (an https URL) are not stored, so there is nothing to keep.
  if (clientId.startsWith("https://")) return;
  await env.OAUTH_KV.put(`${CONNECTED_PREFIX}${clientId}`, "1");
}

/** One run of the upkeep. `now` is the clock the unused registrations are judged by. */
export async function oauthUpkeep(env: Env, now = Date.now()): Promise<UpkeepResult> {
  const oauth = oauthApi(env);
  const purgeCursor = await env.OAUTH_KV.get(PURGE_CURSOR);
  const purge = await oauth.purgeExpiredData({ batchSize: 50, ...(purgeCursor ? { cursor: purgeCursor } : {}) });
  await (purge.cursor ? env.OAUTH_KV.put(PURGE_CURSOR, purge.cursor) : env.OAUTH_KV.delete(PURGE_CURSOR));

  const clientsCursor = await env.OAUTH_KV.get(CLIENTS_CURSOR);
  const page = await oauth.listClients({ limit: CLIENTS_PER_RUN, ...(clientsCursor ? { cursor: clientsCursor } : {}) });
  let clientsDeleted = 0;
  for (const client of page.items) {
    const registered = (client.registrationDate ?? 0) * 1000;
    if (now - registered < UNUSED_CLIENT_MS) continue;
    if ((await env.OAUTH_KV.get(`${CONNECTED_PREFIX}${client.clientId}`)) !== null) continue;
    await oauth.deleteClient(client.clientId);
    clientsDeleted++;
  }
  await (page.cursor ? env.OAUTH_KV.put(CLIENTS_CURSOR, page.cursor) : env.OAUTH_KV.delete(CLIENTS_CURSOR));
  return { purge, clientsChecked: page.items.length, clientsDeleted };
}
