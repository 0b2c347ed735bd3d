// Guards the ways into the Mini App from the chat (issue 29): the /start welcome and the answers that
// list memories, facts and reminders carry a Web App button to the matching page; an answer of the model
// carries none; and a server without an https address (a local run) answers without buttons, which
// Telegram would refuse.
import { describe, expect, it } from "vitest";
import { withMiniApp } from "../../agents/commands/index";
import { botCalls, newChatId } from "./helpers";
import { converse } from "./telegram-updates";

type Markup = { inline_keyboard: Array<Array<{ text: string; web_app?: { url: string } }>> } | undefined;

describe("Web App buttons under the bot's answers", () => {
  it("open the Mini App's page from /start, /memories, /facts and /reminders; a model's answer has none", async () => {
    const chatId = newChatId();
    await converse(chatId, ["/start", "I just finished reading Dune by Frank Herbert", "/memories", "/facts", "/reminders"]);
    const markups = (await botCalls(chatId)).map((c) => c.payload.reply_markup as Markup);
    const buttons = markups.map((m) => m?.inline_keyboard.flat().map((b) => [b.text, b.web_app?.url]));
    expect(buttons).toEqual([
      [["Open my memory", "https://soma.test/tg"]],
      undefined,
      [["See, correct or forget", "https://soma.test/tg/memories"]],
      [["See or correct facts", "https://soma.test/tg/facts"]],
      [["Open reminders", "https://soma.test/tg/reminders"]],
    ]);
  });

  it("are left out without an https address", () => {
    expect(withMiniApp("Your memories", "http://127.0.0.1:8787", "memories", "Open")).toBe("Your memories");
    expect(withMiniApp("Your memories", undefined, "memories", "Open")).toBe("Your memories");
    expect(withMiniApp("Hi", "https://soma.example.com/", "", "Open")).toEqual({
      text: "Hi",
      button: { label: "Open", url: "https://soma.example.com/tg" },
    });
  });
});
