// Browser sessions: an HttpOnly cookie holding a random token whose hash is in auth.sessions.
// The cookie is `__Host-soma_session` (Secure, Path=/, no Domain), so a sibling subdomain cannot plant
// one for this host (login CSRF by cookie tossing: a planted session with a longer Path would be sent
// first, and the person would chat into the planter's account). Cookies issued before the prefix were
// named `soma_session`: one of those is still honoured, once, when no prefixed cookie is present and its
// session was created before LEGACY_COOKIE_CUTOFF; it is then moved to the prefixed name. A session
// created since cannot be tossed in under the old name. After the last such session expires (30 days
// after the cutoff) the move can go.
// The Telegram Mini App cannot count on cookies: inside Telegram's web client it runs in a cross-site
// iframe, where third-party cookies are blocked. It holds its session token itself and sends it as
// `Authorization: Bearer` (worker/routes/mini-app.ts); a header is never sent by a browser on its own,
// so it needs no CSRF defence of its own.
import type { Context, MiddlewareHandler } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { createSession, deleteSession, findSessionPerson, type Person } from "../../db/repositories/auth";
import type { LoginMethod } from "../../platform/telemetry/sinks";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";

const SESSION_COOKIE = "__Host-soma_session";
const LEGACY_SESSION_COOKIE = "soma_session";
/** Sessions created before this instant may still arrive in the legacy cookie (the change's deploy). */
const LEGACY_COOKIE_CUTOFF = new Date("2026-11-25T22:00:00Z");
const COOKIE_OPTIONS = { httpOnly: true, secure: true, sameSite: "Lax", path: "/" } as const;
const SESSION_TTL_SECONDS = 30 * 24 * 3600;

/**
 * Lets the request through only with a valid session; sets `person`.
 * Without one: `redirect` answers 307 to /login (pages and POST /api/chat, as the spec requires, before
 * any other check of the request); `reject` answers 401 JSON (the WebSocket and JSON APIs).
 */
export function requireSession(onMissing: "redirect" | "reject"): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const person = await sessionPerson(c);
    if (!person) {
      if (onMissing === "redirect") return c.redirect("/login", 307);
      throw new ApiError("unauthorized", "Sign in first.");
    }
    c.set("person", person);
    await next();
  };
}

/** The person signed in on this request, or null. */
export async function sessionPerson(c: Context<AppEnv>): Promise<Person | null> {
  const bearer = /^Bearer ([A-Za-z0-9_-]{16,128})$/.exec(c.req.header("authorization") ?? "")?.[1];
  if (bearer) return findSessionPerson(c.var.db, bearer);
  const token = getCookie(c, SESSION_COOKIE);
  if (token) return findSessionPerson(c.var.db, token);
  const legacy = getCookie(c, LEGACY_SESSION_COOKIE);
  if (!legacy) return null;
  const person = await findSessionPerson(c.var.db, legacy, { createdBefore: LEGACY_COOKIE_CUTOFF });
  if (person) {
    setCookie(c, SESSION_COOKIE, legacy, { ...COOKIE_OPTIONS, maxAge: SESSION_TTL_SECONDS });
    deleteCookie(c, LEGACY_SESSION_COOKIE, { path: "/", secure: true });
  }
  return person;
}

/** Starts a session for `userId` and sets its cookie on the response. */
export async function startSession(c: Context<AppEnv>, userId: string, method: Exclude<LoginMethod, "mini-app">): Promise<void> {
  const token = await startBearerSession(c, userId, method, SESSION_TTL_SECONDS);
  setCookie(c, SESSION_COOKIE, token, { ...COOKIE_OPTIONS, maxAge: SESSION_TTL_SECONDS });
}

/** Starts a session for `userId` and returns its token, for a client that sends it as `Authorization: Bearer`. */
export async function startBearerSession(c: Context<AppEnv>, userId: string, method: LoginMethod, ttlSeconds: number): Promise<string> {
  c.var.telemetry.capture({ event: "login", userId, properties: { method } });
  return createSession(c.var.db, userId, ttlSeconds, c.req.header("user-agent"));
}

/** Ends the current session, if any, and clears its cookie. */
export async function endSession(c: Context<AppEnv>): Promise<void> {
  const bearer = /^Bearer (\S+)$/.exec(c.req.header("authorization") ?? "")?.[1];
  if (bearer) await deleteSession(c.var.db, bearer);
  for (const name of [SESSION_COOKIE, LEGACY_SESSION_COOKIE]) {
    const token = getCookie(c, name);
    if (token) await deleteSession(c.var.db, token);
  }
  deleteCookie(c, SESSION_COOKIE, { path: "/", secure: true });
  deleteCookie(c, LEGACY_SESSION_COOKIE, { path: "/", secure: true });
}
