// GET /api/agent: the signed-in person's agent over WebSocket (the AIChatAgent chat protocol).
// The session decides which agent; without one the upgrade is refused with 401.
import { Hono } from "hono";
import { agentFor } from "../agent-routing";
import { requireSession } from "../auth/session";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";

export const agent = new Hono<AppEnv>().get("/", requireSession("reject"), async (c) => {
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
    throw new ApiError("bad_request", "This endpoint speaks WebSocket: send an Upgrade: websocket request.");
  }
  const stub = await agentFor(c.env, c.var.person.id);
  const upgraded = await stub.fetch(c.req.raw);
  // A Durable Object's response has immutable headers; copy it so the app's middleware can add its own.
  return new Response(upgraded.body, { status: upgraded.status, headers: new Headers(upgraded.headers), webSocket: upgraded.webSocket });
});
