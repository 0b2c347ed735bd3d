// CSRF defence for state-changing browser routes: a cross-site form or fetch carries the session
// cookie (SameSite=Lax still sends it on top-level POST navigations from some browsers' older modes),
// so the request's Origin — or, without one, Sec-Fetch-Site — must say it came from Soma itself.
import type { Context, MiddlewareHandler } from "hono";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** True when the request says it comes from another site: its Origin, or without one its Sec-Fetch-Site. */
export function isCrossSite(c: Context<AppEnv>): boolean {
  const allowed = new Set([new URL(c.req.url).origin]);
  if (c.var.config.APP_BASE_URL) allowed.add(new URL(c.var.config.APP_BASE_URL).origin);
  const origin = c.req.header("origin");
  const site = c.req.header("sec-fetch-site");
  return origin ? !allowed.has(origin) : site !== undefined && site !== "same-origin" && site !== "none";
}

export const requireSameOrigin: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!SAFE_METHODS.has(c.req.method) && isCrossSite(c)) throw new ApiError("forbidden", "Cross-site request refused.");
  await next();
};
