// The Telegram Login Widget's signature (https://core.telegram.org/widgets/login#checking-authorization):
// hash = hex(HMAC-SHA256(data_check_string, SHA256(bot_token))), where data_check_string is every
// other field as "key=value", sorted by key, joined by "\n".
import { z } from "zod";

export const TelegramLogin = z.object({
  id: z.coerce.number().int().positive(),
  first_name: z.string().max(256),
  last_name: z.string().max(256).optional(),
  username: z.string().max(64).optional(),
  photo_url: z.url().optional(),
  auth_date: z.coerce.number().int().positive(),
  hash: z.string().regex(/^[0-9a-f]{64}$/),
});
export type TelegramLogin = z.infer<typeof TelegramLogin>;

/** How old a widget sign-in may be: it is made at the moment of the click. */
const MAX_AGE_SECONDS = 600;

const encoder = new TextEncoder();

/** True when `fields` were signed by Telegram for `botToken` within the last ten minutes. */
export async function verifyTelegramLogin(fields: Record<string, string>, botToken: string, now = Date.now()): Promise<boolean> {
  const { hash, ...rest } = fields;
  if (!hash || !/^[0-9a-f]{64}$/.test(hash)) return false;
  const authDate = Number(rest.auth_date);
  if (!Number.isFinite(authDate) || now / 1000 - authDate > MAX_AGE_SECONDS || authDate - now / 1000 > 60) return false;
  const dataCheckString = Object.keys(rest)
    .sort()
    .map((key) => `${key}=${rest[key]}`)
    .join("\n");
  const secret = await crypto.subtle.digest("SHA-256", encoder.encode(botToken));
  const key = await crypto.subtle.importKey("raw", secret, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const expected = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(dataCheckString)));
  const given = new Uint8Array(hash.match(/../g)!.map((byte) => parseInt(byte, 16)));
  return crypto.subtle.timingSafeEqual(expected, given);
}
