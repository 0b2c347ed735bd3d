// Guards how replies fit Telegram: at most 4096 characters a message, split at paragraph, line or
// word boundaries, nothing lost or reordered; and how a send retries (5xx, 429) within its deadline
// against the Bot API stand-in. Hung calls: tests/worker/deadlines.test.ts.
import { env } from "cloudflare:workers";
import { GrammyError } from "grammy";
import { describe, expect, it } from "vitest";
import { splitMessage, TelegramSender, TELEGRAM_MESSAGE_LIMIT } from "../../agents/integrations/telegram-sender";
import { botReplies, failBotApi, newChatId } from "./helpers";

describe("splitMessage", () => {
  it("keeps a short reply whole", () => {
    expect(splitMessage("Noted: Dune (book).")).toEqual(["Noted: Dune (book)."]);
  });

  it("splits a long reply at paragraph breaks, each piece within the limit, losing nothing", () => {
    const paragraphs = Array.from({ length: 30 }, (_, i) => `Paragraph ${i}: ${"word ".repeat(60).trim()}`);
    const text = paragraphs.join("\n\n");
    const pieces = splitMessage(text);
    expect(pieces.length).toBeGreaterThan(1);
    for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(TELEGRAM_MESSAGE_LIMIT);
    expect(pieces.join("\n\n").replace(/\s+/g, " ")).toBe(text.replace(/\s+/g, " "));
    expect(pieces.every((p) => p.startsWith("Paragraph"))).toBe(true);
  });

  it("cuts a single unbroken run at the limit", () => {
    const pieces = splitMessage("x".repeat(10_000));
    expect(pieces.map((p) => p.length)).toEqual([4096, 4096, 1808]);
  });
});

describe("TelegramSender retries within the send deadline", () => {
  it("retries a 5xx and delivers", async () => {
    const chatId = newChatId();
    const waits: number[] = [];
    const sender = new TelegramSender(env.TELEGRAM_BOT_TOKEN, env.TELEGRAM_API_ROOT, { sleep: async (ms) => void waits.push(ms) });
    await failBotApi({ method: "sendMessage", chatId, times: 2, errorCode: 502 });
    await sender.sendText(chatId, "after two failures");
    expect(await botReplies(chatId)).toEqual(["after two failures"]);
    expect(waits).toEqual([250, 500]);
  });

  it("still takes just a sleep function as its third argument", async () => {
    const chatId = newChatId();
    const waits: number[] = [];
    const sender = new TelegramSender(env.TELEGRAM_BOT_TOKEN, env.TELEGRAM_API_ROOT, { sleep: async (ms) => void waits.push(ms) });
    await failBotApi({ method: "sendMessage", chatId, times: 1, errorCode: 429, retryAfter: 3 });
    await sender.sendText(chatId, "after a 429");
    expect(await botReplies(chatId)).toEqual(["after a 429"]);
    expect(waits).toEqual([3000]);
  });

  it("does not wait out a retry_after that ends past the deadline: the 429 is thrown at once", async () => {
    const chatId = newChatId();
    const waits: number[] = [];
    const sender = new TelegramSender(env.TELEGRAM_BOT_TOKEN, env.TELEGRAM_API_ROOT, {
      sendDeadlineMs: 5_000,
      sleep: async (ms) => void waits.push(ms),
    });
    await failBotApi({ method: "sendMessage", chatId, times: 1, errorCode: 429, retryAfter: 20 });
    const error = await sender.sendText(chatId, "too late").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GrammyError);
    expect(error).toMatchObject({ error_code: 429, parameters: { retry_after: 20 } });
    expect(waits).toEqual([]);
    expect(await botReplies(chatId)).toEqual([]);
  });
});
