// Guards "Soma only talks in private chats": a message from a group, supergroup, channel or a chat of
// unknown kind never reaches a person's agent (no login link, memory, model turn, stored chat id or new
// person); a group gets one notice a day as the webhook's reply; a forged "private" chat is refused.
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { WELCOME } from "../../agents/commands/index";
import { GROUP_NOTICE } from "../../worker/telegram/private-chats";
import { botCalls, botReplies, call, newChatId, testDatabase, waitForReplies } from "./helpers";

let nextUpdate = 800_000_000 + Math.floor(Math.random() * 1e8);

function post(update: unknown) {
  return call("/api/messenger/webhook", {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": env.TELEGRAM_WEBHOOK_SECRET },
    body: JSON.stringify(update),
  });
}

function message(chat: Record<string, unknown>, senderId: number, text: string) {
  const updateId = ++nextUpdate;
  return {
    update_id: updateId,
    message: {
      message_id: updateId % 100000,
      date: Math.floor(Date.now() / 1000),
      chat,
      from: { id: senderId, is_bot: false, first_name: "Grace" },
      text,
    },
  };
}

/** A supergroup id in Telegram's style (-100…), unique per test. */
const newGroupId = () => -1_000_000_000_000 - newChatId();

async function telegramAccount(senderId: number) {
  const rows = (await testDatabase().withAuth((tx) =>
    tx.execute(sql`select u.id, u.telegram_chat_id::float8 as chat_id,
                     (select count(*)::int from auth.login_tokens t where t.user_id = u.id) as login_tokens
                   from auth.users u where u.telegram_user_id = ${senderId}`),
  )) as unknown as Array<{ id: string; chat_id: number; login_tokens: number }>;
  return rows[0] ?? null;
}

/** The JSON body of a webhook answer, or null when it has none (no reply in the response). */
async function webhookReply(response: Response): Promise<Record<string, unknown> | null> {
  const text = await response.text();
  return text ? (JSON.parse(text) as Record<string, unknown>) : null;
}

describe("finding 1: group chats — only private chats reach the person's agent", () => {
  it("/login and /login@bot in a group: no link, no reply from the agent, the chat id stays the private one; one notice", async () => {
    const personId = newChatId();
    expect((await post(message({ id: personId, type: "private" }, personId, "/start"))).status).toBe(200);
    expect(await waitForReplies(personId, 1)).toEqual([WELCOME]);
    const before = await telegramAccount(personId);

    const group = newGroupId();
    const first = await post(message({ id: group, type: "supergroup", title: "Family" }, personId, "/login@soma_test_bot"));
    expect(first.status).toBe(200);
    // The notice is the webhook's own answer: Telegram sends it with the acknowledgement.
    expect(await webhookReply(first)).toEqual({ method: "sendMessage", chat_id: group, text: GROUP_NOTICE });
    for (const text of ["/login", "/memories", "I just finished reading Dune"]) {
      const again = await post(message({ id: group, type: "group", title: "Family" }, personId, text));
      expect(again.status).toBe(200);
      expect(await webhookReply(again), text).toBeNull();
    }

    await new Promise((resolve) => setTimeout(resolve, 300)); // an agent's reply would have arrived by now
    expect(await botCalls(group, "")).toEqual([]);
    expect(await botReplies(personId)).toEqual([WELCOME]);
    expect(await telegramAccount(personId)).toEqual({ ...before!, chat_id: personId, login_tokens: 0 });
  });

  it("a stranger writing in a group is not made a person", async () => {
    const stranger = newChatId();
    const response = await post(message({ id: newGroupId(), type: "group", title: "Book club" }, stranger, "hello"));
    expect(response.status).toBe(200);
    expect(await telegramAccount(stranger)).toBeNull();
  });

  it("the notice comes once a day per group, across isolates (the claim is a row), and again the next day", async () => {
    const group = newGroupId();
    const sender = newChatId();
    expect(await webhookReply(await post(message({ id: group, type: "group" }, sender, "/start")))).toMatchObject({ text: GROUP_NOTICE });
    expect(await webhookReply(await post(message({ id: group, type: "group" }, sender, "/start")))).toBeNull();
    // Another group is told on its own.
    const other = newGroupId();
    expect(await webhookReply(await post(message({ id: other, type: "group" }, sender, "/help")))).toMatchObject({
      chat_id: other,
      text: GROUP_NOTICE,
    });

    await testDatabase().withAuth((tx) =>
      tx.execute(sql`update auth.group_chat_notices set notified_at = now() - interval '25 hours' where chat_id = ${group}`),
    );
    expect(await webhookReply(await post(message({ id: group, type: "group" }, sender, "/start")))).toMatchObject({
      chat_id: group,
      text: GROUP_NOTICE,
    });
    expect(await telegramAccount(sender)).toBeNull();
  });

  it("channel posts, channels, and chats of a missing or unknown kind are acknowledged and ignored", async () => {
    const sender = newChatId();
    const channel = newGroupId();
    const post_ = message({ id: channel, type: "channel", title: "News" }, sender, "/login");
    expect((await post({ update_id: ++nextUpdate, channel_post: { ...post_.message, from: undefined } })).status).toBe(200);
    for (const chat of [
      { id: channel, type: "channel" },
      { id: sender },
      { id: sender, type: "secret" },
      { id: sender, type: ["private"] },
    ]) {
      const response = await post(message(chat, sender, "/login"));
      expect(response.status, JSON.stringify(chat)).toBe(200);
      expect(await webhookReply(response), JSON.stringify(chat)).toBeNull();
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await telegramAccount(sender)).toBeNull();
    expect(await botCalls(sender, "")).toEqual([]);
    expect(await botCalls(channel, "")).toEqual([]);
  });

  it("a private chat whose id is not the sender's is refused with 400 and creates nobody", async () => {
    const victim = newChatId();
    const forger = newChatId();
    const response = await post(message({ id: victim, type: "private" }, forger, "/login"));
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: "bad_request" } });
    expect(await telegramAccount(forger)).toBeNull();
    expect(await telegramAccount(victim)).toBeNull();
    expect(await botCalls(victim, "")).toEqual([]);
  });

  it("a private message still works, and its webhook answer carries no reply", async () => {
    const personId = newChatId();
    const response = await post(message({ id: personId, type: "private" }, personId, "/memories"));
    expect(response.status).toBe(200);
    expect(await webhookReply(response)).toBeNull();
    const [reply] = await waitForReplies(personId, 1);
    expect(reply).toContain("I don't remember anything yet.");
    expect((await telegramAccount(personId))?.chat_id).toBe(personId);
  });
});
