// Sign-in and sign-out. Every sign-in must prove that this browser started it on Soma's own pages
// (login CSRF: see worker/auth/login-nonce.ts); every other state change is a POST with an origin check.
//   GET  /auth/link/:token  the one-time link from the bot's /login: a page with one button, so that
//                           link previews and prefetchers, which only GET, cannot spend the token
//   POST /auth/link/:token  the button: same origin and the page's nonce, then spends the token (single
//                           use, 10 minutes) and starts a session
//   GET  /auth/telegram     the Telegram Login Widget's redirect from /login: the nonce /login put in
//                           the widget's auth URL must match this browser's cookie; then Telegram's
//                           signature (HMAC check). Without the nonce nothing is signed in.
//   POST /auth/dev          one-click sign-in as the local developer (ENVIRONMENT=development only)
//   POST /logout            ends the session
import { Hono } from "hono";
import { html } from "hono/html";
import { ensurePersonByEmail, ensureTelegramPerson, peekLoginToken, redeemLoginToken } from "../../db/repositories/auth";
import { issueLoginNonce, loginNonceMatches, spendLoginNonce } from "../auth/login-nonce";
import { isCrossSite, requireSameOrigin } from "../auth/origin";
import { refuseSignIn } from "../auth/refusal";
import { afterSignIn } from "../auth/return-to";
import { endSession, sessionPerson, startSession } from "../auth/session";
import { TelegramLogin, verifyTelegramLogin } from "../auth/telegram-login";
import { limitBody } from "../body-limit";
import { ApiError } from "../errors";
import { page } from "../pages/layout";
import type { AppEnv } from "../types";

const DEV_EMAIL = "dev@soma.local";

const NOT_STARTED_HERE =
  "This sign-in did not start on this browser's sign-in page, so it was not used. Open the sign-in page and sign in from there.";

const EXPIRED_LINK = "This sign-in link has expired or was already used. Send /login to the bot for a new one.";

export const auth = new Hono<AppEnv>()
  .get("/auth/link/:token", async (c) => {
    const owner = await peekLoginToken(c.var.db, c.req.param("token"));
    if (!owner) return refuseSignIn(c, "bad_request", EXPIRED_LINK);
    const nonce = issueLoginNonce(c);
    return c.html(
      page(
        "Sign in · Soma",
        html`<main class="card">
          <h1>Soma</h1>
          <p class="lead">You asked the bot for a sign-in link.</p>
          <p>This link signs this browser in as <strong>${owner.displayName}</strong>, the Telegram account that sent <code>/login</code>.
          Continue only if that was you: if someone else gave you this link, whatever you write would go into their account.</p>
          <form method="post" action="/auth/link/${c.req.param("token")}">
            <input type="hidden" name="nonce" value="${nonce}" />
            <button type="submit">Continue to Soma</button>
          </form>
        </main>`,
      ),
    );
  })
  .post("/auth/link/:token", requireSameOrigin, limitBody(4096), async (c) => {
    const form = await c.req.parseBody();
    // Checked before the token is touched: a request that did not come from the link's page spends nothing.
    if (!(await loginNonceMatches(c, typeof form.nonce === "string" ? form.nonce : undefined))) {
      return refuseSignIn(
        c,
        "forbidden",
        "This sign-in did not come from the link's page in this browser. Open the link from Telegram again.",
      );
    }
    const userId = await redeemLoginToken(c.var.db, c.req.param("token"));
    if (!userId) return refuseSignIn(c, "bad_request", EXPIRED_LINK);
    // Never switch a signed-in browser to another account silently (a link passed on by someone else).
    const current = await sessionPerson(c);
    if (current && current.id !== userId) {
      return refuseSignIn(
        c,
        "conflict",
        `This browser is signed in as ${current.displayName}, and the link is for another account. Sign out first, then send /login to the bot for a new link.`,
        { href: "/app", label: "Back to Soma" },
      );
    }
    spendLoginNonce(c);
    await startSession(c, userId, "link");
    return c.redirect(afterSignIn(c), 303);
  })
  .get("/auth/telegram", async (c) => {
    const token = c.var.config.TELEGRAM_BOT_TOKEN;
    if (!token) throw new ApiError("not_found", "Telegram sign-in is not configured.");
    const { nonce, ...fields } = c.req.query();
    if (isCrossSite(c) || !(await loginNonceMatches(c, nonce))) return refuseSignIn(c, "forbidden", NOT_STARTED_HERE);
    const login = TelegramLogin.safeParse(fields);
    if (!login.success) return refuseSignIn(c, "bad_request", "This is not a Telegram sign-in.");
    if (!(await verifyTelegramLogin(fields, token))) {
      return refuseSignIn(
        c,
        "unauthorized",
        "Telegram's signature does not match, or the sign-in is older than ten minutes. Try again from the sign-in page.",
      );
    }
    const person = await ensureTelegramPerson(c.var.db, {
      telegramUserId: login.data.id,
      chatId: login.data.id, // a bot's private chat with a person has the person's id
      displayName: [login.data.first_name, login.data.last_name].filter(Boolean).join(" "),
    });
    if (person.created) c.var.telemetry.capture({ event: "user_signed_up", userId: person.id, properties: { channel: "telegram" } });
    spendLoginNonce(c);
    await startSession(c, person.id, "telegram");
    return c.redirect(afterSignIn(c), 303);
  })
  .post("/auth/dev", requireSameOrigin, async (c) => {
    if (c.var.config.ENVIRONMENT !== "development") throw new ApiError("not_found", "Nothing at /auth/dev.");
    const person = await ensurePersonByEmail(c.var.db, DEV_EMAIL, "Developer");
    await startSession(c, person.id, "dev");
    // The /login button is a form: a browser goes on to the app; API clients get JSON.
    if (c.req.header("accept")?.includes("text/html")) return c.redirect(afterSignIn(c), 303);
    return c.json({ person });
  })
  .post("/logout", requireSameOrigin, async (c) => {
    await endSession(c);
    return c.redirect("/login", 303);
  });
