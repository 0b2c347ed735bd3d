// Soma is a private assistant: only a person's private chat with the bot reaches their agent. A group
// or supergroup (where a /login link or a memory would be read by everyone, and whose id must never
// become the person's chat) gets at most one short notice a day; channels and chats of a kind Telegram
// did not name get nothing. Installed before the inbox (bot.ts), so nothing after it sees such a
// message: no person is resolved or created, no chat id stored, no agent woken.
//
// The notice is the webhook's own answer (Telegram's "reply in the webhook response"), not a Bot API
// call: it costs the webhook no outbound request and no deadline, and Telegram sends it only with the
// 200 that acknowledges the update. The once-a-day claim is a row in Postgres (auth.group_chat_notices),
// so it holds across isolates and a redelivered update never claims a second notice.
import { Composer, type Context } from "grammy";
import { describeError, logJson } from "../../platform/log";
import type { Database } from "../../db/database";
import { claimGroupNotice } from "../../db/repositories/auth";

export const GROUP_NOTICE = "I only talk in private chats — message me directly.";

/** The parts of a Telegram message that decide whose it is; `type` may be anything, or missing. */
export interface ChatOfMessage {
  chat: { id: number; type?: unknown };
  from?: { id: number } | undefined;
}

/**
 * What kind of chat a message comes from. `private` only when Telegram says so and the chat is the
 * sender's own (in Telegram a private chat's id is the other person's user id); `forged` for a
 * "private" chat of someone else's id, which Telegram never sends.
 */
export function chatKind(message: ChatOfMessage): "private" | "group" | "forged" | "other" {
  const { chat, from } = message;
  if (chat.type === "private") {
    if (!from) return "other";
    return chat.id === from.id ? "private" : "forged";
  }
  return chat.type === "group" || chat.type === "supergroup" ? "group" : "other";
}

export function privateChatsOnly(db: Database): Composer<Context> {
  const composer = new Composer();
  composer.on("message", async (ctx, next) => {
    const kind = chatKind(ctx.message);
    if (kind === "private") return next();
    if (kind !== "group") return;
    // The notice is a courtesy: a database that cannot say whether it was sent today means none.
    const claimed = await claimGroupNotice(db, ctx.chat.id).catch((error: unknown) => {
      logJson("warn", { webhook: "group notice skipped", error: describeError(error) });
      return false;
    });
    if (claimed) await ctx.reply(GROUP_NOTICE);
  });
  return composer;
}
