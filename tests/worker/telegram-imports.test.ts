// Guards imports through the bot (issue 30): a ChatGPT data export's .zip sent as a document is read in
// the person's agent and started, the reply saying what it holds; memory-consolidate's run (driven as
// Inngest drives it) reads it and the bot says what it added; `/import` with pasted saved memories goes
// the same way; a cut-short conversations.json and a Soma export are answered with why, and nothing starts.
import { strToU8, zipSync } from "fflate";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { chatGptConversation } from "../setup/chatgpt-export";
import { newChatId, putTelegramFile, testDatabase, waitForReplies } from "./helpers";
import { personOfChat, sendMessage, sendText } from "./telegram-updates";
import { drive } from "./workflow-drive";

const T = 1714723200; // 2024-05-03T08:00:00Z
const CONVERSATIONS = JSON.stringify([
  chatGptConversation(`c0ffee00-0000-4000-8000-${String(Date.now()).slice(-12)}`, "Trip ideas", T, [
    ["user", "I just finished reading Piranesi by Susanna Clarke", T + 10],
    ["assistant", "You might like The Name of the Wind", T + 20],
  ]),
]);

async function latestImport(userId: string): Promise<string> {
  const [row] = (await testDatabase().withUser(userId, (tx) =>
    tx.execute(sql`select id from events where kind = 'import' order by created_at desc limit 1`),
  )) as unknown as Array<{ id: string }>;
  return row!.id;
}

const document = (fileId: string, name: string, size: number, mime = "application/octet-stream") => ({
  document: { file_id: fileId, file_unique_id: `u-${fileId}`, file_name: name, mime_type: mime, file_size: size },
});

describe("imports sent to the bot", () => {
  it("reads ChatGPT's export .zip sent as a document, starts it, and says what it added when it ends", async () => {
    const chatId = newChatId();
    const zip = zipSync({ "conversations.json": strToU8(CONVERSATIONS), "user.json": strToU8("{}") });
    const fileId = `export-${chatId}`;
    await putTelegramFile(fileId, zip);
    await sendMessage(chatId, document(fileId, "chatgpt-export.zip", zip.length, "application/zip"));
    const [preview] = await waitForReplies(chatId, 1);
    // The first reply to a newcomer starts with the welcome.
    expect(preview).toContain(
      "This holds 1 conversation from ChatGPT, from 3 May 2024 to 3 May 2024, with 1 message of yours: I read only those, about 2 model calls. Send /import go to start, or /import cancel.",
    );
    await sendText(chatId, "/import");
    expect((await waitForReplies(chatId, 2))[1]).toBe(
      "1 conversation from ChatGPT is waiting: send /import go to start, or /import cancel.",
    );
    await sendText(chatId, "/import go");
    expect((await waitForReplies(chatId, 3))[2]).toBe(
      "Importing 1 conversation from ChatGPT. I'll tell you when it's done; /import shows how far it is.",
    );
    const userId = await personOfChat(chatId);
    const importId = await latestImport(userId);
    await drive("memory-consolidate", { name: "memory/import.requested", id: `import-${importId}`, data: { userId, importId } });
    const replies = await waitForReplies(chatId, 4);
    expect(replies[3]).toBe(
      "Imported 1 conversation from ChatGPT: 1 memory and 0 facts added. Ask me about them, or see them with /memories.",
    );
    const books = (await testDatabase().withUser(userId, (tx) =>
      tx.execute(sql`select name from entities where type = 'book'`),
    )) as unknown as unknown[];
    expect(books).toEqual([{ name: "Piranesi" }]);
  });

  it("takes /import with pasted saved memories at once, explains /import alone, and cancels", async () => {
    const chatId = newChatId();
    await sendText(chatId, "/import");
    expect((await waitForReplies(chatId, 1))[0]).toContain(
      "Send me your ChatGPT data export (.zip) or a ChatGPT or Claude conversations.json as a file",
    );
    await sendText(chatId, "/import\n- I just finished reading Dune\n- I am vegetarian");
    expect((await waitForReplies(chatId, 2))[1]).toBe("Importing 2 saved memories. I'll tell you when it's done.");
    await sendText(chatId, "/import");
    expect((await waitForReplies(chatId, 3))[2]).toBe("Importing your saved memories… 0 % (0 memories and 0 facts so far).");
    await sendText(chatId, "/import cancel");
    expect((await waitForReplies(chatId, 4))[3]).toBe("Cancelled: what was not read yet is dropped; what was read stays in your memory.");
  });

  it("answers a cut-short conversations.json and a Soma export with why, and starts nothing", async () => {
    const chatId = newChatId();
    const cut = CONVERSATIONS.slice(0, CONVERSATIONS.length / 2);
    await putTelegramFile(`cut-${chatId}`, cut);
    await sendMessage(chatId, document(`cut-${chatId}`, "conversations.json", cut.length, "application/json"));
    const [first] = await waitForReplies(chatId, 1);
    expect(first).toContain("I couldn't import conversations.json: The file is cut short");
    const soma = JSON.stringify({ format: "soma-export", version: 1 });
    await putTelegramFile(`soma-${chatId}`, soma);
    await sendMessage(chatId, document(`soma-${chatId}`, "soma-export.json", soma.length, "application/json"));
    const replies = await waitForReplies(chatId, 2);
    expect(replies[1]).toContain("I couldn't import soma-export.json: it is a Soma export");
    const userId = await personOfChat(chatId);
    const imports = (await testDatabase().withUser(userId, (tx) =>
      tx.execute(sql`select count(*)::int as n from events where kind = 'import'`),
    )) as unknown as unknown[];
    expect(imports).toEqual([{ n: 0 }]);
  });
});
