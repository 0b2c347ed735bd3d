// Issue 20: the conversation a person has through npm start with a real-shaped model stack: an
// OpenAI-style chat model that streams and sees images, and an OpenAI-style speech server (the
// stand-ins: a voice note's file reading "SPEECH: …" says that; a photo reading "PHOTO: …" shows it).
// A voice note is heard, answered and remembered like typed words, with what was heard shown back; a
// speech server that is down is waited out by the inbox, never dropped; a photo reaches the model as an
// image and its bytes leave the conversation after; replies stream into a draft and arrive formatted.
import { describe, expect, inject, it } from "vitest";
import { WELCOME } from "../../agents/commands/index";
import { NOTHING_HEARD } from "../../agents/telegram-message";
import { freePort } from "./helpers";
import { registerServiceHooks } from "./service-hooks";
import { randomChatId, webhook } from "./service-http";
import { WEBHOOK_SECRET, launch, tempDir, type Service } from "./service-process";
import { waitFor } from "./wait";

const standIn = inject("standInUrl");
const services = registerServiceHooks(standIn);
let updateId = 300_000_000 + Math.floor(Math.random() * 1e8);

interface Call {
  method: string;
  payload: Record<string, unknown>;
  view?: { text: string; entities: Array<{ type: string; offset: number; length: number }> };
  at: number;
}

async function calls(chatId: number, method: string): Promise<Call[]> {
  return (await (await fetch(`${standIn}/__calls?chat_id=${chatId}&method=${method}`)).json()) as Call[];
}

async function replies(chatId: number, count: number, timeoutMs = 30_000): Promise<Call[]> {
  await waitFor(async () => (await calls(chatId, "sendMessage")).length >= count, timeoutMs, `${count} replies`);
  return calls(chatId, "sendMessage");
}

async function putFile(fileId: string, text: string): Promise<void> {
  await fetch(`${standIn}/__files`, { method: "POST", body: JSON.stringify({ fileId, base64: Buffer.from(text).toString("base64") }) });
}

const voice = (fileId: string) => ({ voice: { file_id: fileId, file_unique_id: `u-${fileId}`, duration: 4, mime_type: "audio/ogg" } });

async function start(): Promise<{ service: Service; chatId: number; send: (content: string | Record<string, unknown>) => Promise<void> }> {
  const service = await launch({
    stateDir: tempDir("soma-conversation-"),
    port: await freePort(),
    standIn: services.tap().url,
    env: { AI_VISION: "on" },
  });
  const chatId = randomChatId();
  const send = async (content: string | Record<string, unknown>) => {
    expect(await webhook(service.url, WEBHOOK_SECRET, chatId, ++updateId, content)).toBe(200);
  };
  await send("/start");
  expect((await replies(chatId, 1))[0]!.view!.text).toBe(WELCOME);
  return { service, chatId, send };
}

describe("a real conversation through npm start", () => {
  it("hears a voice note, answers and remembers it like typed words, and shows what it heard", async () => {
    const { chatId, send } = await start();
    const fileId = `voice-${chatId}`;
    await putFile(fileId, "SPEECH: I read The Left Hand of Darkness");
    await send(voice(fileId));
    const reply = (await replies(chatId, 2))[1]!;
    expect(reply.view!.text).toMatch(/^🎤 “I read The Left Hand of Darkness”\n\nDone\. Tool said: .*"created":true/s);
    expect(reply.view!.entities[0]).toMatchObject({ type: "italic", offset: 3 });
    expect([...services.tap().capturedNames().values()]).toContain("The Left Hand of Darkness");
    // The reply grew in a draft first (the tool's status), and was then sent once.
    const drafts = await calls(chatId, "sendMessageDraft");
    expect(drafts.map((d) => d.view!.text)).toContain("Saving that to your memory…");
    expect(drafts.every((d) => d.at <= reply.at)).toBe(true);
    expect(await calls(chatId, "sendMessage")).toHaveLength(2);
    // A note with no words in it gets an honest answer, and no turn.
    await putFile(`${fileId}-hiss`, "(static)");
    await send(voice(`${fileId}-hiss`));
    expect((await replies(chatId, 3))[2]!.view!.text).toBe(NOTHING_HEARD);
  });

  it("waits out a speech server that is down: the note is transcribed once it is back, never dropped", async () => {
    const { chatId, send } = await start();
    const fileId = `voice-outage-${chatId}`;
    await putFile(fileId, "OUTAGE");
    await send(voice(fileId));
    const transcriptions = async () =>
      ((await (await fetch(`${standIn}/__transcriptions`)).json()) as Array<{ fileName: string; bytes: number }>).filter(
        (t) => t.bytes === 6,
      );
    await waitFor(async () => (await transcriptions()).length >= 2, 30_000, "two attempts at the speech server");
    expect(await calls(chatId, "sendMessage")).toHaveLength(1);
    await putFile(fileId, "SPEECH: I read Middlemarch");
    const reply = (await replies(chatId, 2, 60_000)).at(-1)!;
    expect(reply.view!.text).toMatch(/^🎤 “I read Middlemarch”\n\nDone\. Tool said:/);
  });

  it("shows a photo to a model that sees images, then keeps the words and drops the bytes", async () => {
    const { chatId, send } = await start();
    const fileId = `photo-${chatId}`;
    await putFile(fileId, "PHOTO: a red bicycle");
    await send({
      photo: [{ file_id: fileId, file_unique_id: `u-${fileId}`, width: 800, height: 600, file_size: 20 }],
      caption: "my new bike",
    });
    expect((await replies(chatId, 2))[1]!.view!.text).toBe("In your photo I see a red bicycle. my new bike");
    await send("Reply with:\n**Noted** — x < y & *fine*");
    const reply = (await replies(chatId, 3))[2]!;
    expect(reply.view!.text).toBe("Noted — x < y & fine");
    expect(reply.view!.entities.map((e) => e.type)).toEqual(["bold", "italic"]);
    // The second turn's model request has the first message's words, not its image.
    const second = services.tap().modelRequests("Reply with:").at(-1)!;
    expect(second.body).toContain("my new bike");
    expect(second.body).not.toContain("data:image");
  });
});
