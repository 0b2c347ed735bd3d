// Sign-in and sign-out. Every state change is a POST with an origin check.
//   GET  /auth/link/:token  the one-time link from the bot's /login: a page with one button, so that
//                           link previews and prefetchers, which only GET, cannot spend the token
//   POST /auth/link/:token  spends it (single use, 10 minutes) and starts a session
//   GET  /auth/telegram     the Telegram Login Widget's redirect, signed by Telegram (HMAC check)
//   POST /auth/dev          one-click sign-in as the local developer (ENVIRONMENT=development only)
//   POST /logout            ends the session
import { Hono } from "hono";
import { html } from "hono/html";
import { ensurePersonByEmail, ensureTelegramPerson, redeemLoginToken } from "../../db/repositories/auth";
import { TelegramLogin, verifyTelegramLogin } from "../auth/telegram-login";
import { requireSameOrigin } from "../auth/origin";
import { endSession, startSession } from "../auth/session";
import { ApiError } from "../errors";
import { page } from "../pages/layout";
import type { AppEnv } from "../types";

export const DEV_EMAIL = "dev@soma.local";

export const auth = new Hono<AppEnv>()
  .get("/auth/link/:token", (c) =>
    c.html(
      page(
        "Sign in · Soma",
        html`<main class="card">
          <h1>Soma</h1>
          <p class="lead">You asked the bot for a sign-in link.</p>
          <form method="post" action="/auth/link/${c.req.param("token")}"><button type="submit">Continue to Soma</button></form>
        </main>`,
      ),
    ),
  )
  .post("/auth/link/:token", requireSameOrigin, async (c) => {
    const userId = await redeemLoginToken(c.var.db, c.req.param("token"));
    if (!userId) throw new ApiError("bad_request", "This sign-in link has expired or was already used. Send /login to the bot for a new one.");
    await startSession(c, userId, "link");
    return c.redirect("/app", 303);
  })
  .get("/auth/telegram", async (c) => {
    const token = c.var.config.TELEGRAM_BOT_TOKEN;
    if (!token) throw new ApiError("not_found", "Telegram sign-in is not configured.");
    const fields = c.req.query();
    const login = TelegramLogin.safeParse(fields);
    if (!login.success) throw new ApiError("bad_request", "This is not a Telegram sign-in.");
    if (!(await verifyTelegramLogin(fields, token))) throw new ApiError("unauthorized", "Telegram's signature does not match, or the sign-in is older than ten minutes.");
    const person = await ensureTelegramPerson(c.var.db, {
      telegramUserId: login.data.id,
      chatId: login.data.id, // a bot's private chat with a person has the person's id
      displayName: [login.data.first_name, login.data.last_name].filter(Boolean).join(" "),
    });
    if (person.created) c.var.telemetry.capture({ event: "user_signed_up", userId: person.id, properties: { channel: "telegram" } });
    await startSession(c, person.id, "telegram");
    return c.redirect("/app", 303);
  })
  .post("/auth/dev", requireSameOrigin, async (c) => {
    if (c.var.config.ENVIRONMENT !== "development") throw new ApiError("not_found", "Nothing at /auth/dev.");
    const person = await ensurePersonByEmail(c.var.db, DEV_EMAIL, "Developer");
    await startSession(c, person.id, "dev");
    // The /login button is a form: a browser goes on to the app; API clients get JSON.
    if (c.req.header("accept")?.includes("text/html")) return c.redirect("/app", 303);
    return c.json({ person });
  })
  .post("/logout", requireSameOrigin, async (c) => {
    await endSession(c);
    return c.redirect("/login", 303);
  });
