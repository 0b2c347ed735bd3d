// GET /login: how a person signs in. Telegram is the front door: the bot's /login command sends a
// one-time link; the other buttons appear when their configuration is present. The Telegram widget
// redirects to its auth URL, which carries this browser's login nonce (worker/auth/login-nonce.ts):
// without it /auth/telegram signs nobody in. (The widget's data-onauth callback is not used: the
// widget eval()s it, which the page's CSP rightly forbids.)
import { Hono } from "hono";
import { html } from "hono/html";
import { issueLoginNonce } from "../auth/login-nonce";
import type { AppEnv } from "../types";
import { page } from "./layout";

export const login = new Hono<AppEnv>().get("/", (c) => {
  const { TELEGRAM_BOT_USERNAME: bot, ENVIRONMENT } = c.var.config;
  const botLink = bot ? html`<a href="https://t.me/${bot}">@${bot}</a>` : html`the Soma bot`;
  const widgetNonce = bot && c.var.config.TELEGRAM_BOT_TOKEN ? issueLoginNonce(c) : null;
  return c.html(
    page(
      "Sign in · Soma",
      html`<main class="card">
        <h1>Soma</h1>
        <p class="lead">Your assistant that remembers what matters to you.</p>
        <section>
          <h2>Sign in with Telegram</h2>
          <p>Send <code>/login</code> to ${botLink}. It replies with a one-time link that signs you in here
          and shows the same conversation and memories.</p>
          ${
            widgetNonce
              ? html`<p>Or sign in with your Telegram account:</p>
                <script async src="https://telegram.org/js/telegram-widget.js?22" data-telegram-login="${bot}"
                  data-size="large" data-auth-url="/auth/telegram?nonce=${widgetNonce}" data-request-access="write"></script>`
              : ""
          }
        </section>
        ${
          c.var.config.GOOGLE_CLIENT_ID
            ? html`<section>
              <h2>Sign in with Google</h2>
              <a class="button secondary" href="/auth/google/start?intent=signin">Continue with Google</a>
            </section>`
            : ""
        }
        ${
          ENVIRONMENT === "development"
            ? html`<section>
              <h2>Local development</h2>
              <form method="post" action="/auth/dev"><button type="submit">Sign in as the developer</button></form>
            </section>`
            : ""
        }
      </main>`,
    ),
  );
});
