// Sign-in and sign-out. Every route here changes state, so all of them check the origin.
//   POST /auth/dev   one-click sign-in as the local developer (ENVIRONMENT=development only)
//   POST /logout     ends the session
import { Hono } from "hono";
import { ensurePersonByEmail } from "../../db/repositories/auth";
import { requireSameOrigin } from "../auth/origin";
import { endSession, startSession } from "../auth/session";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";

export const DEV_EMAIL = "dev@soma.local";

export const auth = new Hono<AppEnv>()
  .post("/auth/dev", requireSameOrigin, async (c) => {
    if (c.var.config.ENVIRONMENT !== "development") throw new ApiError("not_found", "Nothing at /auth/dev.");
    const person = await ensurePersonByEmail(c.var.db, DEV_EMAIL, "Developer");
    await startSession(c, person.id);
    return c.json({ person });
  })
  .post("/logout", requireSameOrigin, async (c) => {
    await endSession(c);
    return c.redirect("/login", 303);
  });
