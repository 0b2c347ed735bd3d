// The grammY bot of the webhook. It never calls Telegram itself: botInfo is derived from
// configuration (no getMe before the secret check), every reply to a person's message is sent by
// their agent from its durable inbox, and the webhook's own few notices (group chats, deleted
// accounts) travel in the webhook's response. One Composer per feature, installed here.
import { Bot } from "grammy";
import type { UserFromGetMe } from "grammy/types";
import type { Config } from "../../platform/config";
import { inbox, type InboxDeps } from "./updates";
import { privateChatsOnly } from "./private-chats";

/** The bot's identity from its token ("<bot id>:<secret>") and username. */
function botInfoFrom(token: string, username: string | undefined): UserFromGetMe {
  const id = Number(token.split(":")[0]);
  return {
    id: Number.isFinite(id) ? id : 0,
    is_bot: true,
    first_name: "Soma",
    username: username ?? "soma_bot",
    can_join_groups: false,
    can_read_all_group_messages: false,
    supports_inline_queries: false,
    can_connect_to_business: false,
    has_main_web_app: false,
    has_topics_enabled: false,
    allows_users_to_create_topics: false,
    can_manage_bots: false,
    supports_join_request_queries: false,
  };
}

export function createTelegramBot(config: Config & { TELEGRAM_BOT_TOKEN: string }, deps: InboxDeps): Bot {
  const bot = new Bot(config.TELEGRAM_BOT_TOKEN, {
    botInfo: botInfoFrom(config.TELEGRAM_BOT_TOKEN, config.TELEGRAM_BOT_USERNAME),
    // A sendMessage from the webhook becomes its response body (see webhookReply in routes/telegram.ts).
    client: { apiRoot: config.TELEGRAM_API_ROOT, canUseWebhookReply: (method) => method === "sendMessage" },
  });
  bot.use(privateChatsOnly(deps.db));
  bot.use(inbox(deps));
  bot.catch((error) => {
    // Thrown back to the webhook route, which answers 5xx so Telegram redelivers: nothing is lost.
    throw error.error;
  });
  return bot;
}
