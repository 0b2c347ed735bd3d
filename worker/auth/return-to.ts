// Where a sign-in goes on to: the app, or back to the page that sent the person to sign in. Only the
// OAuth consent page does that (an MCP app asked to connect, GET /authorize): it leaves its own path in
// a short-lived cookie, and the sign-in routes (worker/routes/auth.ts, google.ts) read it back. Only a
// path of this origin under /authorize is ever followed, so the cookie cannot make an open redirect.
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { AppEnv } from "../types";

const RETURN_COOKIE = "__Host-soma_return";
const RETURN_SECONDS = 15 * 60;
const RETURNABLE = /^\/authorize\?[^\s\\]*$/;

/** Remembers `path` (an /authorize URL's path and query) as where the next sign-in goes on to. */
export function returnAfterSignIn(c: Context<AppEnv>, path: string): void {
  if (!RETURNABLE.test(path)) return;
  setCookie(c, RETURN_COOKIE, path, { httpOnly: true, secure: true, sameSite: "Lax", path: "/", maxAge: RETURN_SECONDS });
}

/** Where a completed sign-in goes: the remembered consent page (once), else the app. */
export function afterSignIn(c: Context<AppEnv>): string {
  const path = getCookie(c, RETURN_COOKIE);
  if (path === undefined) return "/app";
  deleteCookie(c, RETURN_COOKIE, { path: "/", secure: true });
  return RETURNABLE.test(path) ? path : "/app";
}
