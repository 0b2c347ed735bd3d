// POST /api/messenger/webhook: Telegram updates. Order of checks, each before any work of the next:
// secret (constant time, 401) → size (413) → JSON (400) → shape (400; a "private" chat that is not the
// sender's own is refused too) → kind (only "message" is processed; anything else, channel posts
// included, is acknowledged and ignored) → private chats only (worker/telegram/private-chats.ts) →
// the sender's agent stores it → 200, whose body may carry the webhook's one notice as a sendMessage.
// A failure after that point answers 500 so Telegram redelivers (the agent dedupes by update_id) —
// only while it can be an outage: an update that fails MAX_STORE_ATTEMPTS times for any other reason is
// kept as a dead letter (agents/dead-letters.ts) and acknowledged, so it is never redelivered forever.
import { Hono, type Context } from "hono";
import { BotError, webhookCallback } from "grammy";
import type { Update } from "grammy/types";
import { z } from "zod";
import { limitBody } from "../body-limit";
import { secretsEqual } from "../auth/secrets";
import { ApiError } from "../errors";
import { MAX_TELEGRAM_TEXT_CHARS } from "../../agents/inbox-policy";
import { deadLetters } from "../../agents/dead-letters";
import { classifyFailure } from "../../platform/faults";
import { describeError, logJson } from "../../platform/log";
import { createTelegramBot } from "../telegram/bot";
import { chatKind } from "../telegram/private-chats";
import type { AppEnv } from "../types";
import { readJson } from "../validation";

const SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token";
const MAX_UPDATE_BYTES = 256 * 1024;

/** The part of an update this route and the agent's inbox rely on; grammY reads the rest. */
const TelegramUpdate = z.looseObject({
  update_id: z.number().int().nonnegative(),
  message: z
    .looseObject({
      message_id: z.number().int().nonnegative(),
      // `type` is read but not validated: anything but "private" is simply not a private chat.
      chat: z.looseObject({ id: z.number().int(), type: z.unknown().optional() }),
      from: z
        .looseObject({ id: z.number().int(), is_bot: z.boolean(), first_name: z.string(), last_name: z.string().optional() })
        .optional(),
      text: z.string().max(MAX_TELEGRAM_TEXT_CHARS).optional(),
      caption: z.string().max(MAX_TELEGRAM_TEXT_CHARS).optional(),
    })
    .refine((message) => chatKind(message) !== "forged", { message: "a private chat's id must be the sender's id", path: ["chat", "id"] })
    .optional(),
});

/**
 * grammY's own "hono" adapter hands a webhook reply (already a JSON string) to c.json, which encodes it
 * a second time into a JSON string literal that Telegram cannot execute. This one sends it as it is.
 */
function webhookReply(c: Context<AppEnv>) {
  let resolveResponse!: (response: Response) => void;
  return {
    update: c.req.json() as Promise<Update>,
    header: c.req.header(SECRET_HEADER),
    end: () => resolveResponse(c.body(null, 200)),
    respond: (json: string) => resolveResponse(c.body(json, 200, { "content-type": "application/json" })),
    unauthorized: () => resolveResponse(c.body(null, 401)),
    handlerReturn: new Promise<Response>((resolve) => (resolveResponse = resolve)),
  };
}

export const telegram = new Hono<AppEnv>().post(
  "/",
  async (c, next) => {
    const { TELEGRAM_WEBHOOK_SECRET: secret } = c.var.config;
    if (!secret || !(await secretsEqual(c.req.header(SECRET_HEADER), secret))) {
      throw new ApiError("unauthorized", "Wrong or missing webhook secret.");
    }
    await next();
  },
  limitBody(MAX_UPDATE_BYTES),
  async (c) => {
    const update = await readJson(c, TelegramUpdate);
    if (!update.message) return c.json({ ok: true, ignored: true });
    const config = c.var.config;
    if (!config.TELEGRAM_BOT_TOKEN) throw new ApiError("config_invalid", "TELEGRAM_BOT_TOKEN is not set.");
    const bot = createTelegramBot(
      { ...config, TELEGRAM_BOT_TOKEN: config.TELEGRAM_BOT_TOKEN },
      { env: c.env, db: c.var.db, telemetry: c.var.telemetry },
    );
    // grammY re-checks the secret and dispatches the (already parsed, cached) update.
    try {
      return await webhookCallback(bot, webhookReply, {
        secretToken: config.TELEGRAM_WEBHOOK_SECRET,
        onTimeout: "throw",
        timeoutMilliseconds: 8000,
      })(c);
    } catch (error) {
      const cause = error instanceof BotError ? error.error : error;
      // An outage (or an error of unknown kind while Postgres is unreachable): Telegram redelivers later.
      if (classifyFailure(cause) === "transient" || !(await c.var.db.ping(2000))) throw error;
      const { message } = update;
      const { dead, attempts } = await deadLetters(c.env).failedToStore({
        key: `webhook:${update.update_id}`,
        personId: null,
        // Whose words these are, for account deletion: no person may exist yet (storing is what failed).
        senderId: message.from?.id ?? null,
        updateId: update.update_id,
        chatId: message.chat.id,
        text: message.text ?? message.caption ?? "",
        error: describeError(cause),
      });
      if (!dead) throw error;
      logJson("error", {
        requestId: c.var.requestId,
        webhook: "update set aside as a dead letter",
        updateId: update.update_id,
        attempts,
        error: describeError(cause),
      });
      return c.json({ ok: true, deadLettered: true });
    }
  },
);
