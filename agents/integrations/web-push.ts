// Web Push from the Worker: RFC 8030 delivery, RFC 8291 encryption (aes128gcm) and RFC 8292 VAPID, by
// @block65/webcrypto-web-push 2.0.0. Chosen after reading its source: WebCrypto only (so it runs in
// workerd; `web-push` needs Node's crypto.createECDH and https), aes128gcm with one record padded to
// 4096 octets (the length tells the push service nothing), the `vapid t=…, k=…` scheme with an ES256
// JWT whose `aud` is the endpoint's origin and `exp` 12 h ahead; `@pushforge/builder` 2.0.5 still
// encrypts with the old `aesgcm` draft. The words travel encrypted end to end: the push service sees
// the ciphertext, the TTL, the urgency and the topic, never what the notification says.
//
// A subscription's endpoint is a URL a browser handed over, so the Worker never POSTs anywhere it is
// told: only https endpoints of the known push services (pushEndpointProblem), plus loopback ones
// outside production, where the tests run a push-service stand-in.
import { buildPushPayload } from "@block65/webcrypto-web-push";
import type { Config } from "../../platform/config";

/** The push services browsers subscribe with: Chrome/Edge/Android (FCM), Firefox, Windows, Safari. */
const PUSH_SERVICES = [
  /^fcm\.googleapis\.com$/,
  /^android\.googleapis\.com$/,
  /^(?:[a-z0-9-]+\.)*push\.services\.mozilla\.com$/,
  /^(?:[a-z0-9-]+\.)*notify\.windows\.com$/,
  /^(?:[a-z0-9-]+\.)*push\.apple\.com$/,
];
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** Why the Worker will not push to `endpoint`, or null when it will. */
export function pushEndpointProblem(endpoint: string, config: Pick<Config, "ENVIRONMENT">): string | null {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return "is not a URL";
  }
  if (url.protocol !== "https:") return "is not https";
  if (url.username || url.password) return "carries credentials";
  if (config.ENVIRONMENT !== "production" && LOOPBACK.has(url.hostname)) return null;
  if (url.port && url.port !== "443") return "is not on the push service's port";
  if (!PUSH_SERVICES.some((host) => host.test(url.hostname))) return "is not a known push service";
  return null;
}

/** What a notification says and where a tap leads; the service worker (web/public/sw.js) shows it. */
export interface Notice {
  title: string;
  body: string;
  /** A newer notification with the same tag replaces the older one on the device. */
  tag: string;
  /** The app page a tap opens (/app…). */
  url: string;
  /** When it happened (ISO). */
  at: string;
}

export interface PushOptions {
  /** Seconds the push service keeps it for a device that is offline, then drops it. */
  ttlSeconds: number;
  urgency: "low" | "normal" | "high";
  /** Replaces an undelivered message of the same topic at the push service (≤ 32 base64url characters). */
  topic?: string;
}

export type PushOutcome = "sent" | "gone" | "retry" | "refused";

/** The most a notice's body carries (its JSON must stay within the 3993 bytes one record holds). */
const BODY_MAX = 1000;

/** Whether this deployment can push (a VAPID key pair is configured). */
export function pushConfigured(config: Config): boolean {
  return Boolean(config.VAPID_PUBLIC_KEY && config.VAPID_PRIVATE_KEY);
}

/**
 * Sends `notice` to one subscription: "sent" (201/202), "gone" (404/410: the subscription is dead,
 * prune it), "retry" (429, 5xx, the network: try again later), or "refused" (any other answer: the
 * same request would be refused again). Never throws for the push service's sake.
 */
export async function sendPush(
  config: Config,
  subscription: { endpoint: string; keys: { p256dh: string; auth: string } },
  notice: Notice,
  options: PushOptions,
  signal?: AbortSignal,
): Promise<PushOutcome> {
  if (!config.VAPID_PUBLIC_KEY || !config.VAPID_PRIVATE_KEY) return "refused";
  if (pushEndpointProblem(subscription.endpoint, config)) return "refused";
  const subject = config.VAPID_SUBJECT ?? (config.APP_BASE_URL?.startsWith("https://") ? config.APP_BASE_URL : "mailto:soma@localhost");
  const body = notice.body.length > BODY_MAX ? `${notice.body.slice(0, BODY_MAX - 1)}…` : notice.body;
  const payload = await buildPushPayload(
    {
      data: { ...notice, body },
      options: {
        ttl: Math.max(1, Math.round(options.ttlSeconds)),
        urgency: options.urgency,
        ...(options.topic ? { topic: options.topic } : {}),
      },
    },
    { endpoint: subscription.endpoint, expirationTime: null, keys: subscription.keys },
    { subject, publicKey: config.VAPID_PUBLIC_KEY, privateKey: config.VAPID_PRIVATE_KEY },
  );
  let response: Response;
  try {
    response = await fetch(subscription.endpoint, { ...payload, redirect: "manual", signal: signal ?? AbortSignal.timeout(10_000) });
  } catch {
    return "retry";
  }
  await response.body?.cancel();
  if (response.status === 201 || response.status === 202 || response.status === 200) return "sent";
  if (response.status === 404 || response.status === 410) return "gone";
  if (response.status === 429 || response.status >= 500) return "retry";
  return "refused";
}

/** A topic for `id` within the push service's limit (32 characters of the base64url alphabet): a UUID without its dashes. */
export function pushTopic(id: string): string {
  return id.replace(/[^A-Za-z0-9]/g, "").slice(0, 32);
}
