// Talking to the bot as a person does in the worker tests: text updates through the real webhook,
// and who the sender became (auth.users by Telegram id).
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { call, testDatabase, waitForReplies } from "./helpers";

let nextUpdate = Math.floor(Math.random() * 1e9);

/** Posts a private-chat text message from `chatId` (also the sender's Telegram id) to the webhook. */
export async function sendText(chatId: number, text: string, firstName = "Ada"): Promise<void> {
  await sendMessage(chatId, { text }, firstName);
}

/** Posts a private-chat message from `chatId` with `content` (text, voice, photo, sticker, forward_origin…). */
export async function sendMessage(chatId: number, content: Record<string, unknown>, firstName = "Ada"): Promise<void> {
  const updateId = ++nextUpdate;
  const response = await call("/api/messenger/webhook", {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": env.TELEGRAM_WEBHOOK_SECRET },
    body: JSON.stringify({
      update_id: updateId,
      message: {
        message_id: updateId % 100000,
        date: Math.floor(Date.now() / 1000),
        chat: { id: chatId, type: "private" },
        from: { id: chatId, is_bot: false, first_name: firstName },
        ...content,
      },
    }),
  });
  if (response.status !== 200) throw new Error(`webhook answered ${response.status}`);
}

/** Sends `texts` in order and returns the bot's replies to them (one each, after `before` earlier ones). */
export async function converse(chatId: number, texts: string[], before = 0): Promise<string[]> {
  for (const text of texts) await sendText(chatId, text);
  return (await waitForReplies(chatId, before + texts.length)).slice(before);
}

/** The person the Telegram sender `chatId` is. */
export async function personOfChat(chatId: number): Promise<string> {
  const rows = (await testDatabase().withAuth((tx) =>
    tx.execute(sql`select id from auth.users where telegram_user_id = ${chatId}`),
  )) as unknown as Array<{ id: string }>;
  if (!rows[0]) throw new Error(`nobody has Telegram id ${chatId}`);
  return rows[0].id;
}
