// Web Push subscriptions: one per browser a person turned notifications on in, kept as their
// connection to that browser's push service — an oauth_connections row with provider
// "webpush:<sha-256 of the endpoint>", the endpoint and its keys sealed with TokenCipher (the
// access_token slot), a label ("Chrome on Android"), when it was made and last pushed to. Under
// row-level security like every row; a browser's subscription belongs to whoever subscribed it last
// (releaseEndpoint, soma_system, Web Push rows only).
import { and, asc, eq, like, ne, sql } from "drizzle-orm";
import type { Tx } from "../database";
import { oauthConnections } from "../schema";
import type { TokenCipher } from "../token-cipher";

const PREFIX = "webpush:";

/** What a browser's PushManager.subscribe() hands over (its toJSON()), as the Worker keeps it. */
export interface PushSubscriptionKeys {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

export interface PushDevice {
  id: string;
  label: string;
  /** The endpoint's SHA-256 (hex): the browser computes it of its own subscription to find "this device". */
  endpointHash: string;
  createdAt: string;
  lastUsedAt: string | null;
}

/** A subscription opened for sending. */
export interface OpenedSubscription extends PushSubscriptionKeys {
  id: string;
}

/** The endpoint's SHA-256 in hex: the row's provider after "webpush:". */
async function endpointHash(endpoint: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(endpoint));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The person's devices, oldest first. */
export async function listPushDevices(tx: Tx): Promise<PushDevice[]> {
  const rows = await tx
    .select({
      id: oauthConnections.id,
      provider: oauthConnections.provider,
      label: oauthConnections.label,
      createdAt: oauthConnections.createdAt,
      lastUsedAt: oauthConnections.lastUsedAt,
    })
    .from(oauthConnections)
    .where(like(oauthConnections.provider, `${PREFIX}%`))
    .orderBy(asc(oauthConnections.createdAt));
  return rows.map((r) => ({
    id: r.id,
    label: r.label ?? "A browser",
    endpointHash: r.provider.slice(PREFIX.length),
    createdAt: r.createdAt.toISOString(),
    lastUsedAt: r.lastUsedAt?.toISOString() ?? null,
  }));
}

/**
 * Keeps `subscription` for the person (the same browser subscribing again refreshes its keys and
 * label). Returns its id, or null when the person already has `cap` other devices.
 */
export async function savePushSubscription(
  tx: Tx,
  userId: string,
  subscription: PushSubscriptionKeys,
  label: string,
  cipher: TokenCipher,
  cap: number,
): Promise<string | null> {
  const provider = `${PREFIX}${await endpointHash(subscription.endpoint)}`;
  // Counted under a per-person lock, so two subscribes at once cannot both pass the cap.
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`push:${userId}`}, 0))`);
  const [others] = (await tx.execute(
    sql`select count(*)::int as n from oauth_connections where provider like ${`${PREFIX}%`} and provider <> ${provider}`,
  )) as unknown as Array<{ n: number }>;
  if ((others?.n ?? 0) >= cap) return null;
  const kept: PushSubscriptionKeys = {
    endpoint: subscription.endpoint,
    keys: { p256dh: subscription.keys.p256dh, auth: subscription.keys.auth },
  };
  const sealed = await cipher.encrypt(JSON.stringify(kept), { userId, provider, column: "access_token" });
  const [row] = await tx
    .insert(oauthConnections)
    .values({ userId, provider, accessTokenEnc: sealed, label })
    .onConflictDoUpdate({ target: [oauthConnections.userId, oauthConnections.provider], set: { accessTokenEnc: sealed, label } })
    .returning({ id: oauthConnections.id });
  return row?.id ?? null;
}

/**
 * Deletes the rows of this endpoint that belong to anyone but `userId` (a soma_system transaction:
 * the browser was someone else's device before this person signed in on it).
 */
export async function releaseEndpoint(systemTx: Tx, endpoint: string, userId: string): Promise<void> {
  const provider = `${PREFIX}${await endpointHash(endpoint)}`;
  // No RETURNING: soma_system reads only the columns it needs to find the rows.
  await systemTx.delete(oauthConnections).where(and(eq(oauthConnections.provider, provider), ne(oauthConnections.userId, userId)));
}

/** Every subscription of the person, opened (one that no longer opens is deleted: it cannot be sent to). */
export async function openPushSubscriptions(tx: Tx, userId: string, cipher: TokenCipher): Promise<OpenedSubscription[]> {
  const rows = await tx
    .select({ id: oauthConnections.id, provider: oauthConnections.provider, sealed: oauthConnections.accessTokenEnc })
    .from(oauthConnections)
    .where(like(oauthConnections.provider, `${PREFIX}%`));
  const opened: OpenedSubscription[] = [];
  for (const row of rows) {
    try {
      const subscription = JSON.parse(await cipher.decrypt(row.sealed ?? "", { userId, provider: row.provider, column: "access_token" }));
      const { endpoint, keys } = subscription as PushSubscriptionKeys;
      opened.push({ id: row.id, endpoint, keys });
    } catch {
      await removePushDevice(tx, row.id);
    }
  }
  return opened;
}

/** Whether the person has a device to push to, without opening any. */
export async function hasPushDevice(tx: Tx): Promise<boolean> {
  const [row] = await tx
    .select({ id: oauthConnections.id })
    .from(oauthConnections)
    .where(like(oauthConnections.provider, `${PREFIX}%`))
    .limit(1);
  return Boolean(row);
}

/** Removes one of the person's devices; false when it is not theirs or already gone. */
export async function removePushDevice(tx: Tx, id: string): Promise<boolean> {
  const gone = await tx
    .delete(oauthConnections)
    .where(and(eq(oauthConnections.id, id), like(oauthConnections.provider, `${PREFIX}%`)))
    .returning({ id: oauthConnections.id });
  return gone.length > 0;
}

/** Notes a delivery through the device. */
export async function markPushed(tx: Tx, id: string): Promise<void> {
  await tx.update(oauthConnections).set({ lastUsedAt: sql`now()` }).where(eq(oauthConnections.id, id));
}
