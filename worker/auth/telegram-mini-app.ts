// Telegram Mini App launch data (https://core.telegram.org/bots/webapps#validating-data-received-via-the-mini-app):
// `initData` is a query string Telegram signs for one bot. The check, as documented:
//   secret_key       = HMAC-SHA256(key = "WebAppData", message = bot token)
//   data_check_string = every field but `hash`, as "key=value" with the value as received (decoded once
//                       from the query string, never re-encoded), sorted, joined by "\n"
//   valid            = hex(HMAC-SHA256(key = secret_key, message = data_check_string)) == hash
// `signature` (the Ed25519 one for third parties) is a field like any other here and so is signed too.
// Written here rather than taken from @tma.js/init-data-node: twenty lines of WebCrypto, compared in
// constant time (that library compares with ===), and no fp-ts in the Worker's bundle.
import { z } from "zod";

/** How old launch data may be to start a session: Telegram signs it when the Mini App opens. */
export const MINI_APP_MAX_AGE_SECONDS = 3600;

const TelegramUser = z.object({
  id: z.number().int().positive(),
  first_name: z.string().max(256).default(""),
  last_name: z.string().max(256).optional(),
  username: z.string().max(64).optional(),
  is_bot: z.boolean().optional(),
});

export type MiniAppLaunch =
  | { ok: true; user: z.infer<typeof TelegramUser>; authDate: number }
  | { ok: false; reason: "malformed" | "forged" | "stale" | "no_user" };

const encoder = new TextEncoder();

async function hmac(key: BufferSource, message: string): Promise<ArrayBuffer> {
  const imported = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return crypto.subtle.sign("HMAC", imported, encoder.encode(message));
}

/**
 * Checks `initData` (the raw string the Mini App was launched with) against `botToken`: signed by
 * Telegram for this bot, at most an hour old, and naming the person who opened it.
 */
export async function verifyMiniAppLaunch(initData: string, botToken: string, now = Date.now()): Promise<MiniAppLaunch> {
  let params: URLSearchParams;
  try {
    params = new URLSearchParams(initData);
  } catch {
    return { ok: false, reason: "malformed" };
  }
  const keys = [...params.keys()];
  // A field given twice could be read one way here and another way by whoever signed: refused.
  if (new Set(keys).size !== keys.length) return { ok: false, reason: "malformed" };
  const hash = params.get("hash");
  if (!hash || !/^[0-9a-f]{64}$/.test(hash)) return { ok: false, reason: "malformed" };
  const dataCheckString = [...params]
    .filter(([key]) => key !== "hash")
    .map(([key, value]) => `${key}=${value}`)
    .sort()
    .join("\n");
  const secret = await hmac(encoder.encode("WebAppData"), botToken);
  const expected = await hmac(secret, dataCheckString);
  const given = new Uint8Array(hash.match(/../g)!.map((byte) => Number.parseInt(byte, 16)));
  if (!crypto.subtle.timingSafeEqual(expected, given)) return { ok: false, reason: "forged" };
  const authDate = Number(params.get("auth_date"));
  if (!Number.isInteger(authDate) || authDate <= 0) return { ok: false, reason: "malformed" };
  const age = now / 1000 - authDate;
  if (age > MINI_APP_MAX_AGE_SECONDS || age < -60) return { ok: false, reason: "stale" };
  const userField = params.get("user");
  if (!userField) return { ok: false, reason: "no_user" };
  let user: unknown;
  try {
    user = JSON.parse(userField);
  } catch {
    return { ok: false, reason: "malformed" };
  }
  const parsed = TelegramUser.safeParse(user);
  if (!parsed.success || parsed.data.is_bot) return { ok: false, reason: "malformed" };
  return { ok: true, user: parsed.data, authDate };
}
