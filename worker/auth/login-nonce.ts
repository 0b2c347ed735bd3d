// Login CSRF defence: a sign-in counts only when this browser started it on one of Soma's own pages.
// A signed Telegram widget URL or a bot link is a bearer credential for its owner's account; opened by
// someone else's browser it would sign that person into the owner's account, and everything they then
// write would land there. So the sign-in pages (GET /login, GET /auth/link/:token) set a random nonce
// in an HttpOnly, SameSite=Lax cookie and also write it into the page (the widget's auth URL, the
// link's confirmation form); the sign-in itself must bring the same value back. Another site can
// neither read the page nor set the cookie (the __Host- prefix also shuts out sibling subdomains).
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { AppEnv } from "../types";
import { secretsEqual } from "./secrets";

const LOGIN_NONCE_COOKIE = "__Host-soma_login";
/** How long a sign-in page stays usable: the widget and the bot's link are both made for the moment. */
const LOGIN_NONCE_TTL_SECONDS = 600;
const NONCE_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/**
 * The nonce this browser's sign-in must bring back; sets (or refreshes) its cookie. A browser that
 * already holds one keeps it, so two sign-in tabs do not invalidate each other.
 */
export function issueLoginNonce(c: Context<AppEnv>): string {
  const held = getCookie(c, LOGIN_NONCE_COOKIE);
  const nonce = held && NONCE_SHAPE.test(held) ? held : randomNonce();
  setCookie(c, LOGIN_NONCE_COOKIE, nonce, { httpOnly: true, secure: true, sameSite: "Lax", path: "/", maxAge: LOGIN_NONCE_TTL_SECONDS });
  // The page now carries a per-browser value: no shared cache may keep it.
  c.header("Cache-Control", "no-store");
  return nonce;
}

/** True when the request carries `given` and it equals this browser's nonce cookie (constant time). */
export async function loginNonceMatches(c: Context<AppEnv>, given: string | undefined): Promise<boolean> {
  const held = getCookie(c, LOGIN_NONCE_COOKIE);
  if (!held || !given) return false;
  return secretsEqual(given, held);
}

/** Forgets the nonce once it has served a sign-in. */
export function spendLoginNonce(c: Context<AppEnv>): void {
  deleteCookie(c, LOGIN_NONCE_COOKIE, { path: "/", secure: true });
}

function randomNonce(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
}
