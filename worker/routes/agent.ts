// /api/agent: the signed-in person's agent. GET with Upgrade: websocket is the AIChatAgent chat
// protocol; GET /api/agent/get-messages is the transcript the chat hook loads first. The session
// decides which agent; without one the answer is 401. A handshake from another origin is refused (403).
import { Hono } from "hono";
import { agentFor } from "../agent-routing";
import { isCrossSite } from "../auth/origin";
import { requireSession } from "../auth/session";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";

export const agent = new Hono<AppEnv>()
  .get("/get-messages", requireSession("reject"), async (c) => {
    const stub = await agentFor(c.env, c.var.person.id);
    return copy(await stub.fetch(c.req.raw));
  })
  .get("/", requireSession("reject"), async (c) => {
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
      throw new ApiError("bad_request", "This endpoint speaks WebSocket: send an Upgrade: websocket request.");
    }
    // A WebSocket handshake is a GET, which the CSRF check lets through, yet the socket sends chat
    // messages: a page of another origin (even a same-site one, which gets the cookie) must not open it.
    if (isCrossSite(c)) throw new ApiError("forbidden", "Cross-site WebSocket refused.");
    const stub = await agentFor(c.env, c.var.person.id);
    return copy(await stub.fetch(c.req.raw));
  });

/** A Durable Object's response has immutable headers; a copy lets the app's middleware add its own. */
function copy(response: Response): Response {
  return new Response(response.body, {
    status: response.status,
    headers: new Headers(response.headers),
    ...(response.webSocket ? { webSocket: response.webSocket } : {}),
  });
}
