// Issue 20: what people send besides typed text, through the real webhook and agent, with the offline
// model (the worker tests' model: no speech model, no vision). Each kind gets an honest answer — how to
// turn voice on, that only a caption was read — or one short word of its own, never an empty turn; a
// forward is someone else's words, so nothing in it is saved as the person's; replies are formatted.
// The same with a real speech model and a vision model, through npm start: tests/node/real-conversation.test.ts.
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { NO_SPEECH_MODEL, NO_VISION, tooLongVoice } from "../../agents/telegram-message";
import { otherKindReply } from "../../agents/telegram-message";
import { RATE_NOTICE } from "../../agents/channels";
import { WELCOME } from "../../agents/commands/index";
import { botCalls, newChatId, putTelegramFile, waitForReplies } from "./helpers";
import { personOfChat, sendMessage, sendText } from "./telegram-updates";

async function started(): Promise<number> {
  const chatId = newChatId();
  await sendText(chatId, "/start");
  expect(await waitForReplies(chatId, 1)).toEqual([WELCOME]);
  return chatId;
}

const voice = (fileId: string, duration = 5) => ({
  voice: { file_id: fileId, file_unique_id: `u${fileId}`, duration, mime_type: "audio/ogg" },
});
const photo = (fileId: string, caption?: string) => ({
  photo: [{ file_id: fileId, file_unique_id: `u${fileId}`, width: 800, height: 600, file_size: 40_000 }],
  ...(caption ? { caption } : {}),
});

async function conversation(chatId: number): Promise<Array<{ role: string; text: string; metadata: Record<string, unknown> }>> {
  const agent = await getAgentByName(env.UserAgent, await personOfChat(chatId));
  const messages = JSON.parse(await agent.transcript()) as Array<{
    role: string;
    parts: Array<{ type: string; text?: string }>;
    metadata: Record<string, unknown>;
  }>;
  return messages.map((m) => ({ role: m.role, text: m.parts.map((p) => p.text ?? `[${p.type}]`).join(""), metadata: m.metadata ?? {} }));
}

describe("voice notes with no speech model", () => {
  it("says honestly how to turn voice on, without a turn, and keeps nothing as said", async () => {
    const chatId = await started();
    await putTelegramFile("offline-voice", "SPEECH: I read Dune");
    await sendMessage(chatId, voice("offline-voice"));
    expect((await waitForReplies(chatId, 2))[1]).toBe(NO_SPEECH_MODEL);
    expect((await conversation(chatId)).filter((m) => m.role === "user")).toEqual([]);
  });

  it("refuses a note longer than VOICE_MAX_SECONDS, saying the limit", async () => {
    const chatId = await started();
    await sendMessage(chatId, voice("long-voice", 3600));
    expect((await waitForReplies(chatId, 2))[1]).toBe(tooLongVoice(600));
  });

  it("refuses a note that says it lasts 5 s but weighs 20 MB (hours of speech), the same way, before downloading it", async () => {
    const chatId = await started();
    const fileId = `heavy-voice-${chatId}`;
    await putTelegramFile(fileId, "SPEECH: hours of it", 20 * 1024 * 1024);
    await sendMessage(chatId, { voice: { ...voice(fileId, 5).voice, file_size: 20 * 1024 * 1024 } });
    expect((await waitForReplies(chatId, 2))[1]).toBe(tooLongVoice(600));
    // Not even asked for: getFile carries no chat id, so every call is read and this file's looked for.
    const getFiles = (await (await fetch(`${env.STAND_IN_URL}/__calls?method=getFile`)).json()) as Array<{ payload: { file_id: string } }>;
    expect(getFiles.filter((c) => c.payload.file_id === fileId)).toEqual([]);
  });
});

describe("photos with a model that cannot see", () => {
  it("answers a photo without a caption honestly", async () => {
    const chatId = await started();
    await sendMessage(chatId, photo("p1"));
    expect((await waitForReplies(chatId, 2))[1]).toBe(NO_VISION);
  });

  it("reads the caption, says that it only read the caption, and downloads nothing", async () => {
    const chatId = await started();
    await sendMessage(chatId, photo("p2", "I just finished reading Dune"));
    const [, reply] = await waitForReplies(chatId, 2);
    expect(reply).toMatch(/^\(I can't see photos with the model I'm using, so I only read your caption\.\)\n\nNoted: Dune \(book\)/);
    expect(await botCalls(chatId, "getFile")).toEqual([]);
    const [message] = (await conversation(chatId)).filter((m) => m.role === "user");
    expect(message).toMatchObject({ text: "I just finished reading Dune", metadata: { photo: true, captionOnly: true } });
  });
});

describe("the media budget", () => {
  it("takes 6 voice notes and photos a minute (each is a download and a model call), then one notice", async () => {
    const chatId = await started();
    for (let i = 0; i < 7; i++) await sendMessage(chatId, photo(`budget-${chatId}-${i}`));
    const replies = (await waitForReplies(chatId, 8)).slice(1);
    expect(replies.slice(0, 6)).toEqual(Array(6).fill(NO_VISION));
    expect(replies[6]).toBe(RATE_NOTICE);
    // Text still goes through: the media budget is its own.
    await sendText(chatId, "which books did I read?");
    expect((await waitForReplies(chatId, 9))[8]).toBe("I don't have any books saved yet.");
  });
});

describe("forwards", () => {
  it("reach the model marked as someone else's words, and nothing is saved as the person's", async () => {
    const chatId = await started();
    await sendMessage(chatId, {
      text: "I just finished reading Dune",
      forward_origin: { type: "user", date: 1, sender_user: { id: 9, is_bot: false, first_name: "Bob" } },
    });
    const [, reply] = await waitForReplies(chatId, 2);
    expect(reply).toBe("That's from Bob, so I haven't saved it as yours. If it's true for you too, tell me in your own words.");
    const [message] = (await conversation(chatId)).filter((m) => m.role === "user");
    expect(message).toMatchObject({ text: "Forwarded from Bob:\nI just finished reading Dune", metadata: { forwardedFrom: "Bob" } });
    await sendText(chatId, "which books did I read?");
    expect((await waitForReplies(chatId, 3))[2]).toBe("I don't have any books saved yet.");
  });
});

describe("kinds Soma does not read", () => {
  it("get one short reply each and no model turn", async () => {
    const chatId = await started();
    await sendMessage(chatId, { location: { latitude: 52.5, longitude: 13.4 } });
    await sendMessage(chatId, { dice: { emoji: "🎲", value: 3 } });
    expect((await waitForReplies(chatId, 3)).slice(1)).toEqual([otherKindReply("location"), otherKindReply("poll")]);
    expect((await conversation(chatId)).filter((m) => m.role === "user")).toEqual([]);
  });
});

describe("replies in Telegram", () => {
  it("are formatted, and grow in a draft while the turn runs", async () => {
    const chatId = await started();
    await sendText(chatId, "I just finished reading Dune");
    await waitForReplies(chatId, 2);
    const [, reply] = await botCalls(chatId);
    expect(reply!.payload.parse_mode).toBe("HTML");
    expect(reply!.view!.text).toBe("Noted: Dune (book). I'll remember it.");
    const drafts = await botCalls(chatId, "sendMessageDraft");
    expect(drafts.length).toBeGreaterThan(0);
    expect(drafts[0]!.view!.text).toBe("Saving that to your memory…");
    expect(drafts[0]!.at).toBeLessThanOrEqual(reply!.at);
  });
});
