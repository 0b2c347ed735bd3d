// The memory center as a Telegram Mini App: the web app's own pages and API, opened inside Telegram.
//   GET  /tg, /tg/memories, /tg/facts, /tg/reminders, /tg/settings
//        the built index.html, served without a session: Telegram puts the launch data in the URL's
//        fragment, which never reaches the server, so the page signs itself in (web/src/mini-app.ts).
//        The shell holds no one's data. Telegram's web client frames it (worker/app.ts: frame-ancestors).
//   POST /auth/telegram/mini-app  { initData }
//        Telegram's signature over the launch data (worker/auth/telegram-mini-app.ts), at most an hour
//        old, naming a person: that person, created as /start creates them, gets a session whose token
//        the page keeps and sends as `Authorization: Bearer` (cookies do not reach a cross-site iframe).
//        The launch data is read from the body and never logged.
import { Hono } from "hono";
import { z } from "zod";
import { ensureTelegramPerson } from "../../db/repositories/auth";
import { startBearerSession } from "../auth/session";
import { MINI_APP_MAX_AGE_SECONDS, verifyMiniAppLaunch } from "../auth/telegram-mini-app";
import { requireSameOrigin } from "../auth/origin";
import { limitBody } from "../body-limit";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";
import { readJson } from "../validation";

/** The Mini App's pages, each the web app's page of the same name under /app. */
export const MINI_APP_PATHS = ["/tg", "/tg/memories", "/tg/facts", "/tg/reminders", "/tg/settings"] as const;

/** A Mini App session lasts a working day: every opening from Telegram signs in afresh. */
const MINI_APP_SESSION_SECONDS = 12 * 3600;

const REFUSALS = {
  malformed: "This is not launch data from Telegram. Open Soma from its chat in Telegram.",
  forged: "Telegram's signature on this launch does not match this bot. Open Soma from its own chat in Telegram.",
  stale: `This launch is more than ${MINI_APP_MAX_AGE_SECONDS / 60} minutes old. Close Soma and open it again from the chat.`,
  no_user: "Telegram did not say who opened Soma. Open it from your private chat with the bot.",
} as const;

const Launch = z.object({ initData: z.string().min(1).max(8192) });

export const miniApp = new Hono<AppEnv>();

for (const path of MINI_APP_PATHS) {
  miniApp.get(path, async (c) => {
    const index = await c.env.ASSETS.fetch(new URL("/index.html", c.req.url));
    return new Response(index.body, {
      status: index.status,
      headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
    });
  });
}

miniApp.post("/auth/telegram/mini-app", requireSameOrigin, limitBody(16 * 1024), async (c) => {
  const token = c.var.config.TELEGRAM_BOT_TOKEN;
  if (!token) throw new ApiError("not_found", "Telegram is not set up on this server.");
  const { initData } = await readJson(c, Launch);
  const launch = await verifyMiniAppLaunch(initData, token);
  if (!launch.ok) throw new ApiError(launch.reason === "malformed" ? "bad_request" : "unauthorized", REFUSALS[launch.reason]);
  const { user } = launch;
  const person = await ensureTelegramPerson(c.var.db, {
    telegramUserId: user.id,
    chatId: user.id, // the bot's private chat with a person has the person's id
    displayName: [user.first_name, user.last_name].filter(Boolean).join(" "),
  });
  if (person.created) c.var.telemetry.capture({ event: "user_signed_up", userId: person.id, properties: { channel: "telegram" } });
  c.set("person", person);
  const session = await startBearerSession(c, person.id, "mini-app", MINI_APP_SESSION_SECONDS);
  return c.json({ token: session, person: { id: person.id, displayName: person.displayName } });
});
