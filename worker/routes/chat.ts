// POST /api/chat: one chat turn over HTTP for API clients, streamed as the AI SDK UI message stream.
// The session check comes first, before the body is even read: without a session the answer is 307 to
// /login whatever was sent (spec, smoke 4). Then the same-origin check of every state-changing route.
import { Hono } from "hono";
import { z } from "zod";
import { MAX_MESSAGE_CHARS } from "../../agents/channels";
import { RATE_LIMITS } from "../../agents/rate-limit";
import { agentFor } from "../agent-routing";
import { requireSameOrigin } from "../auth/origin";
import { requireSession } from "../auth/session";
import { limitBody } from "../body-limit";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";
import { readJson } from "../validation";

const MAX_CHAT_BODY_BYTES = 64 * 1024;

const ChatRequest = z.object({
  message: z
    .string()
    .trim()
    .min(1, "message must not be empty")
    .max(MAX_MESSAGE_CHARS, `message is longer than ${MAX_MESSAGE_CHARS} characters`),
});

export const chat = new Hono<AppEnv>().post(
  "/",
  requireSession("redirect"),
  // A turn changes state (the conversation, memories): a cross-site page must not start one.
  requireSameOrigin,
  limitBody(MAX_CHAT_BODY_BYTES),
  async (c) => {
    const { message } = await readJson(c, ChatRequest);
    const agent = await agentFor(c.env, c.var.person.id);
    const result = await agent.chat(message);
    if (result.status === "rate_limited") {
      throw new ApiError("rate_limited", `At most ${RATE_LIMITS.chat} messages a minute (all channels together); try again shortly.`, {
        "Retry-After": "60",
      });
    }
    // Only a deleted person's stray request gets here (deletion ends their sessions).
    if (result.status === "erased") throw new ApiError("not_found", "This account was deleted.");
    // The AI SDK's UI message stream protocol: any AI SDK client (useChat, readUIMessageStream) reads it.
    return new Response(result.stream, {
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        "x-vercel-ai-ui-message-stream": "v1",
        "x-soma-message-id": result.messageId,
      },
    });
  },
);
