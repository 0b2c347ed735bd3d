// The web app's pages. Every one is the same built index.html (the client routes); the Worker serves
// it only with a session, so a signed-out visitor lands on /login instead of an empty app.
import { Hono } from "hono";
import { requireSession } from "../auth/session";
import type { AppEnv } from "../types";

export const app = new Hono<AppEnv>();

app.get("/", (c) => c.redirect("/app", 302));

for (const path of ["/app", "/app/memories", "/app/facts", "/app/reminders", "/app/settings"]) {
  app.get(path, requireSession("redirect"), async (c) => {
    const index = await c.env.ASSETS.fetch(new URL("/index.html", c.req.url));
    return new Response(index.body, {
      status: index.status,
      headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
    });
  });
}
