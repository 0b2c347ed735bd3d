// Browser sessions: an HttpOnly cookie holding a random token whose hash is in auth.sessions.
import type { Context, MiddlewareHandler } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { createSession, deleteSession, findSessionPerson, type Person } from "../../db/repositories/auth";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";

const SESSION_COOKIE = "soma_session";
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
  const token = getCookie(c, SESSION_COOKIE);
  return token ? findSessionPerson(c.var.db, token) : null;
}

/** Starts a session for `userId` and sets its cookie on the response. */
export async function startSession(c: Context<AppEnv>, userId: string, method: "link" | "telegram" | "google" | "dev"): Promise<void> {
  c.var.telemetry.capture({ event: "login", userId, properties: { method } });
  const token = await createSession(c.var.db, userId, SESSION_TTL_SECONDS, c.req.header("user-agent"));
  setCookie(c, SESSION_COOKIE, token, {
    httpOnly: true,
    secure: true,
    sameSite: "Lax",
    path: "/",
    maxAge: SESSION_TTL_SECONDS,
  });
}

/** Ends the current session, if any, and clears its cookie. */
export async function endSession(c: Context<AppEnv>): Promise<void> {
  const token = getCookie(c, SESSION_COOKIE);
  if (token) await deleteSession(c.var.db, token);
  deleteCookie(c, SESSION_COOKIE, { path: "/", secure: true });
}
