// POST /api/chat: one chat turn over HTTP for API clients. The session check comes first, before the
// body is even read: without a session the answer is 307 to /login whatever was sent (spec, smoke 4).
import { Hono } from "hono";
import { z } from "zod";
import { requireSession } from "../auth/session";
import { limitBody } from "../body-limit";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";
import { readJson } from "../validation";

const MAX_CHAT_BODY_BYTES = 64 * 1024;

export const ChatRequest = z.object({
  message: z.string().trim().min(1, "message must not be empty").max(8000, "message is longer than 8000 characters"),
});

export const chat = new Hono<AppEnv>().post(
  "/",
  requireSession("redirect"),
  limitBody(MAX_CHAT_BODY_BYTES),
  async (c) => {
    const { message } = await readJson(c, ChatRequest);
    throw new ApiError("unavailable", `Chat turns arrive with the agent (message of ${message.length} characters not processed).`);
  },
);
