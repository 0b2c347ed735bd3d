// GET /api/health: the spec's contract {ok, service: "web", db, ts}, with a real round trip to Postgres.
// Dependency-light on purpose: no model, no agent, no external API, so it answers within 2 s even when
// the database hangs.
import { Hono } from "hono";
import type { AppEnv } from "../types";

const DB_PING_TIMEOUT_MS = 1500;

export const health = new Hono<AppEnv>().get("/", async (c) => {
  const db = await c.var.db.ping(DB_PING_TIMEOUT_MS);
  c.header("Cache-Control", "no-store");
  return c.json({ ok: db, service: "web", db, ts: new Date().toISOString() }, db ? 200 : 503);
});
