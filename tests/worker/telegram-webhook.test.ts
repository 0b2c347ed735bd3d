// Guards the Telegram channel: the secret is checked first (no parsing, no outbound call without it),
// bad input gets a JSON 4xx, only messages are processed, the sender's agent answers each update
// once, and the commands work. The Bot API is a local stand-in.
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { otherKindReply } from "../../agents/telegram-message";
import { HELP, WELCOME } from "../../agents/commands/index";
import { botCalls, call, newChatId, openLoginLink, testDatabase, waitForReplies } from "./helpers";

let nextUpdate = Math.floor(Math.random() * 1e9);

function post(body: unknown, secret: string | null = env.TELEGRAM_WEBHOOK_SECRET) {
  return call("/api/messenger/webhook", {
    method: "POST",
    headers: { "content-type": "application/json", ...(secret === null ? {} : { "x-telegram-bot-api-secret-token": secret }) },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

function textUpdate(chatId: number, text: string, updateId = ++nextUpdate) {
  return {
    update_id: updateId,
    message: {
      message_id: updateId % 100000,
      date: Math.floor(Date.now() / 1000),
      chat: { id: chatId, type: "private" },
      from: { id: chatId, is_bot: false, first_name: "Ada" },
      text,
    },
  };
}

async function personOf(chatId: number): Promise<string> {
  const db = testDatabase();
  const rows = (await db.withAuth((tx) =>
    tx.execute(sql`select id from auth.users where telegram_user_id = ${chatId}`),
  )) as unknown as Array<{ id: string }>;
  return rows[0]!.id;
}

describe("POST /api/messenger/webhook: refusals", () => {
  it("401 JSON for a missing or wrong secret, with no call to Telegram", async () => {
    const chatId = newChatId();
    for (const secret of [null, "wrong", `${env.TELEGRAM_WEBHOOK_SECRET}x`, ""]) {
      const response = await post(textUpdate(chatId, "hello"), secret);
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ error: { code: "unauthorized" } });
    }
    expect(await botCalls(chatId, "")).toEqual([]);
  });

  it("400 for malformed JSON and for a body that is not an update", async () => {
    expect((await post("{not json")).status).toBe(400);
    expect((await post({ hello: "world" })).status).toBe(400);
    expect((await post({ update_id: -1 })).status).toBe(400);
  });

  it("413 for an oversized body", async () => {
    expect((await post({ update_id: 1, pad: "x".repeat(300_000) })).status).toBe(413);
  });

  it("acknowledges updates that are not messages and does nothing", async () => {
    const chatId = newChatId();
    const response = await post({ update_id: ++nextUpdate, edited_message: textUpdate(chatId, "edit").message });
    expect(response.status).toBe(200);
    expect(await botCalls(chatId, "")).toEqual([]);
  });
});

describe("POST /api/messenger/webhook: conversations", () => {
  it("welcomes a new person, captures a book and recalls it", async () => {
    const chatId = newChatId();
    expect((await post(textUpdate(chatId, "/start"))).status).toBe(200);
    await waitForReplies(chatId, 1);
    expect((await post(textUpdate(chatId, "I just finished reading Dune"))).status).toBe(200);
    await waitForReplies(chatId, 2);
    await post(textUpdate(chatId, "which books did I read?"));
    const replies = await waitForReplies(chatId, 3);
    expect(replies).toEqual([WELCOME, "Noted: Dune (book). I'll remember it.", "Your books: Dune."]);

    const rows = (await testDatabase().withUser(await personOf(chatId), (tx) =>
      tx.execute(sql`select type, name from entities`),
    )) as unknown as unknown[];
    expect(rows).toEqual([{ type: "book", name: "Dune" }]);
  });

  it("greets on first contact even without /start", async () => {
    const chatId = newChatId();
    await post(textUpdate(chatId, "I visited Porto"));
    const [reply] = await waitForReplies(chatId, 1);
    expect(reply).toBe(`${WELCOME}\n\nNoted: Porto (place). I'll remember it.`);
  });

  it("answers an update delivered five times at once exactly once", async () => {
    const chatId = newChatId();
    const update = textUpdate(chatId, "I read Kindred");
    const responses = await Promise.all(Array.from({ length: 5 }, () => post(update)));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    await waitForReplies(chatId, 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await waitForReplies(chatId, 1)).toHaveLength(1);
  });

  it("runs the commands: /memories, /forget, /reset, /login, unknown", async () => {
    const chatId = newChatId();
    await post(textUpdate(chatId, "/start"));
    await post(textUpdate(chatId, "I read Solaris"));
    await post(textUpdate(chatId, "I watched Alien"));
    await post(textUpdate(chatId, "/memories book"));
    await post(textUpdate(chatId, "/forget solaris"));
    await post(textUpdate(chatId, "/memories"));
    await post(textUpdate(chatId, "/reset"));
    await post(textUpdate(chatId, "/login"));
    await post(textUpdate(chatId, "/dance"));
    const replies = await waitForReplies(chatId, 9);
    expect(replies.slice(3, 7)).toEqual([
      "Your books:\n• Solaris (book)",
      "Forgotten: Solaris (book).",
      "Your recent memories:\n• Alien (movie)",
      "Fresh start: I cleared our conversation. Your memories are still here (/memories).",
    ]);
    expect(replies[7]).toMatch(/^Open this link.*\nhttps:\/\/soma\.test\/auth\/link\/[\w-]{40,}$/s);
    expect(replies[8]).toBe(`I don't know /dance.\n\n${HELP}`);
  });

  it("answers a sticker, and a message of a kind it cannot read, with one short word of its own", async () => {
    const chatId = newChatId();
    await post(textUpdate(chatId, "/start"));
    const sticker = textUpdate(chatId, "");
    delete (sticker.message as { text?: string }).text;
    await post({ ...sticker, message: { ...sticker.message, sticker: { file_id: "s", file_unique_id: "s1", width: 1, height: 1 } } });
    const game = textUpdate(chatId, "");
    delete (game.message as { text?: string }).text;
    await post({ ...game, message: { ...game.message, game: { title: "x" } } });
    expect((await waitForReplies(chatId, 3)).slice(1)).toEqual([otherKindReply("sticker"), otherKindReply("other")]);
  });

  it("sends one friendly notice past 10 messages a minute", async () => {
    const chatId = newChatId();
    for (let i = 0; i < 13; i++) expect((await post(textUpdate(chatId, `hello ${i}`))).status).toBe(200);
    await waitForReplies(chatId, 11, 20_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const all = await waitForReplies(chatId, 11);
    expect(all).toHaveLength(11);
    expect(all.filter((r) => r.startsWith("You're writing faster"))).toHaveLength(1);
  });
});

describe("one person, two channels", () => {
  it("signing in on the web with the bot's /login link shows the Telegram conversation and memories", async () => {
    const chatId = newChatId();
    await post(textUpdate(chatId, "I just finished reading Anathem"));
    await post(textUpdate(chatId, "/login"));
    const replies = await waitForReplies(chatId, 2);
    const link = new URL(/https:\/\/\S+/.exec(replies[1]!)![0]);

    const signIn = await openLoginLink(link.pathname.split("/").at(-1)!);
    expect(signIn.status).toBe(303);
    const cookie = signIn.headers
      .getSetCookie()
      .find((c) => c.startsWith("__Host-soma_session="))!
      .split(";")[0]!;

    const transcript = await call("/api/agent/get-messages", { headers: { cookie } });
    expect(transcript.status).toBe(200);
    const messages = (await transcript.json()) as Array<{ role: string; parts: Array<{ type: string; text?: string }> }>;
    expect(
      messages.map((m) =>
        m.parts
          .filter((p) => p.type === "text")
          .map((p) => p.text)
          .join(""),
      ),
    ).toEqual([
      "I just finished reading Anathem",
      // The welcome went to Telegram only; the conversation holds the model's answer.
      "Noted: Anathem (book). I'll remember it.",
    ]);
    const memories = (await (await call("/api/memories", { headers: { cookie } })).json()) as { memories: Array<{ name: string }> };
    expect(memories.memories.map((m) => m.name)).toEqual(["Anathem"]);
  });
});
