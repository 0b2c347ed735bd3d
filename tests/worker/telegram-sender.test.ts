// Guards how replies fit Telegram: at most 4096 characters a message, split at paragraph, line or
// word boundaries, nothing lost or reordered; and how a send retries (5xx, 429) within its deadline
// against the Bot API stand-in. Hung calls: tests/worker/deadlines.test.ts.
import { env } from "cloudflare:workers";
import { GrammyError } from "grammy";
import { describe, expect, it } from "vitest";
import { TELEGRAM_MESSAGE_LIMIT } from "../../agents/integrations/telegram-format";
import { splitMessage, TelegramSender } from "../../agents/integrations/telegram-sender";
import { botCalls, botReplies, failBotApi, newChatId } from "./helpers";

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

describe("the model's Markdown in Telegram", () => {
  const sender = () => new TelegramSender(env.TELEGRAM_BOT_TOKEN, env.TELEGRAM_API_ROOT, { sleep: async () => {} });

  it("arrives as formatting (HTML parse mode), every character the model wrote visible", async () => {
    const chatId = newChatId();
    await sender().sendMarkdown(chatId, "You finished **Dune** & *Hyperion*; x < y, 5 * 3, a_b. `npm test`");
    const [call] = await botCalls(chatId);
    expect(call!.payload.parse_mode).toBe("HTML");
    expect(call!.view!.text).toBe("You finished Dune & Hyperion; x < y, 5 * 3, a_b. npm test");
    expect(call!.view!.entities.map((e) => e.type)).toEqual(["bold", "italic", "code"]);
  });

  it("is sent again as plain text when Telegram cannot parse its formatting, so the reply is never lost", async () => {
    const chatId = newChatId();
    await failBotApi({
      method: "sendMessage",
      chatId,
      times: 1,
      errorCode: 400,
      description: "Bad Request: can't parse entities: Unsupported start tag",
    });
    await sender().sendMarkdown(chatId, "Your **books**: Dune");
    const calls = await botCalls(chatId);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.payload.parse_mode).toBeUndefined();
    expect(calls[0]!.payload.text).toBe("Your books: Dune");
  });

  it("splits a long formatted reply into messages Telegram accepts, the formatting kept in each", async () => {
    const chatId = newChatId();
    const paragraph = `**Note** ${"word ".repeat(150).trim()}`;
    await sender().sendMarkdown(chatId, Array.from({ length: 12 }, () => paragraph).join("\n\n"));
    const calls = await botCalls(chatId);
    expect(calls.length).toBeGreaterThan(1);
    for (const call of calls) {
      expect(call.view!.text.length).toBeLessThanOrEqual(TELEGRAM_MESSAGE_LIMIT);
      expect(call.view!.entities[0]).toMatchObject({ type: "bold", offset: 0, length: 4 });
    }
  });

  it("splits a reply that renders to nothing but is longer than a message, so none of it is refused (issue 25)", async () => {
    const chatId = newChatId();
    // Only link-reference definitions: Markdown with no block to render goes out as written, in pieces.
    const markdown = Array.from({ length: 120 }, (_, i) => `[ref-${i}]: https://example.com/a/long/path/${i}`).join("\n");
    expect(markdown.length).toBeGreaterThan(TELEGRAM_MESSAGE_LIMIT);
    await sender().sendMarkdown(chatId, markdown);
    const calls = await botCalls(chatId, "");
    expect(calls.map((c) => c.method).filter((m) => m.includes(":"))).toEqual([]);
    expect(calls.length).toBeGreaterThan(1);
    for (const call of calls) expect(call.view!.text.length).toBeLessThanOrEqual(TELEGRAM_MESSAGE_LIMIT);
    expect(calls.map((c) => c.view!.text).join("\n")).toBe(markdown);
  });

  it("shows a draft of the reply as it is written, half-written Markdown closed", async () => {
    const chatId = newChatId();
    expect(await sender().draft(chatId, 7, "You read **Du")).toBe("shown");
    const [call] = await botCalls(chatId, "sendMessageDraft");
    expect(call!.payload).toMatchObject({ draft_id: 7, parse_mode: "HTML" });
    expect(call!.view).toEqual({ text: "You read Du", entities: [{ type: "bold", offset: 9, length: 2 }] });
  });

  it("says drafts are unsupported when Telegram refuses them in this chat", async () => {
    const chatId = newChatId();
    await failBotApi({ method: "sendMessageDraft", chatId, times: 1, errorCode: 400, description: "Bad Request: TEXTDRAFT_PEER_INVALID" });
    expect(await sender().draft(chatId, 1, "Hello")).toBe("unsupported");
    await failBotApi({ method: "sendMessageDraft", chatId, times: 1, errorCode: 502 });
    expect(await sender().draft(chatId, 1, "Hello")).toBe("shown");
  });
});
