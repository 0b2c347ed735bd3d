// Guards how the web chat shows what came as more than typed words, in Debian's Chromium against
// `npm start` with the stand-in model (which sees images) and speech server: a Telegram voice note is
// labelled "Voice note" over what was heard, a photo "Photo" (never its raw "[photo]" placeholder), a
// forward "Forwarded from Bob" over its words (the prefix not repeated), readable at phone width. And an
// image picked or pasted in the web composer: made small in the browser, seen by the model, its bytes
// gone from the conversation once answered; a file that is not an image is refused before it is sent.
import { FACT_EXTRACTION_MARKER } from "../../../agents/fact-extraction";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { hang, webhook } from "../service-http";
import { fitsWidth, openPage, PHONE, screenshots, signedInPage, startSession, type Session } from "./harness";

const standIn = inject("standInUrl");
const WEBHOOK_SECRET = "browser-media-secret";
let session: Session;

beforeAll(async () => {
  session = await startSession({
    TELEGRAM_BOT_TOKEN: "525252:browser-media-token",
    TELEGRAM_WEBHOOK_SECRET: WEBHOOK_SECRET,
    TELEGRAM_API_ROOT: standIn,
    AI_PROVIDER: "openai-compatible",
    AI_BASE_URL: `${standIn}/v1`,
    AI_MODEL: "stand-in",
    AI_VISION: "on",
  });
}, 120_000);
afterAll(() => session?.stop());

let nextUpdate = 400_000_000 + Math.floor(Math.random() * 1e8);
const telegram = async (chatId: number, content: string | Record<string, unknown>) =>
  expect(await webhook(session.app.url, WEBHOOK_SECRET, chatId, ++nextUpdate, content)).toBe(200);

/** A file the stand-in Bot API serves as `fileId`: its bytes are `text` (the stand-ins read them). */
async function putFile(fileId: string, text: string): Promise<void> {
  await fetch(`${standIn}/__files`, { method: "POST", body: JSON.stringify({ fileId, base64: Buffer.from(text).toString("base64") }) });
}

async function botTexts(chatId: number): Promise<string[]> {
  const response = await fetch(`${standIn}/__calls?chat_id=${chatId}&method=sendMessage`);
  return ((await response.json()) as Array<{ payload: { text: string } }>).map((c) => c.payload.text);
}

/** Waits until the bot has sent `count` messages to `chatId`, and returns them. */
async function repliesTo(chatId: number, count: number): Promise<string[]> {
  await expect.poll(async () => (await botTexts(chatId)).length, { timeout: 30_000 }).toBeGreaterThanOrEqual(count);
  return botTexts(chatId);
}

describe("marks on a person's messages in the web chat", () => {
  it("labels a voice note, a photo and a forward, and shows their words without the raw placeholder or prefix", async () => {
    const chatId = 730_000_000 + Math.floor(Math.random() * 9_000_000);
    await putFile(`voice-${chatId}`, "SPEECH: I read Piranesi last week");
    await telegram(chatId, {
      voice: { file_id: `voice-${chatId}`, file_unique_id: `u-voice-${chatId}`, duration: 4, mime_type: "audio/ogg" },
    });
    await repliesTo(chatId, 1);
    await putFile(`photo-${chatId}`, "PHOTO: a red bicycle");
    await telegram(chatId, {
      photo: [{ file_id: `photo-${chatId}`, file_unique_id: `u-photo-${chatId}`, width: 800, height: 600, file_size: 20 }],
      caption: "my new bike",
    });
    await repliesTo(chatId, 2);
    await telegram(chatId, {
      text: "Try the ramen at Ichiran",
      forward_origin: { type: "user", sender_user: { first_name: "Bob" }, date: 1 },
    });
    await repliesTo(chatId, 3);
    await telegram(chatId, "/login");
    const link = (await repliesTo(chatId, 4)).map((t) => /https?:\/\/\S+\/auth\/link\/\S+/.exec(t)?.[0]).find(Boolean);
    expect(link).toBeDefined();

    const { page, problems } = await openPage(session.browser);
    await page.goto(link!);
    await page.getByRole("button", { name: "Continue to Soma" }).click();
    await page.waitForURL(`${session.app.url}/app`);
    const mine = page.getByRole("article", { name: "From you" });
    await expect.poll(() => mine.count(), { timeout: 10_000 }).toBeGreaterThanOrEqual(3);

    const voice = mine.filter({ hasText: "Piranesi" });
    expect(await voice.getByTestId("message-mark").allInnerTexts()).toEqual(["🎤 Voice note"]);
    expect(await voice.locator(".typed").innerText()).toBe("I read Piranesi last week");

    const photo = mine.filter({ hasText: "my new bike" });
    expect(await photo.getByTestId("message-mark").allInnerTexts()).toEqual(["📷 Photo"]);
    expect(await photo.locator(".typed").allInnerTexts()).toEqual(["my new bike"]);
    expect(await photo.innerText()).not.toContain("[photo]");
    // The bytes left the conversation once answered: nothing of the image is on the page.
    expect(await photo.locator("img").count()).toBe(0);

    const forward = mine.filter({ hasText: "Ichiran" });
    expect(await forward.getByTestId("message-mark").allInnerTexts()).toEqual(["↪ Forwarded from Bob"]);
    expect(await forward.locator(".typed").innerText()).toBe("Try the ramen at Ichiran");

    // Read out as words: the icon is hidden from assistive technology, the label is not.
    expect(await voice.getByTestId("message-mark").locator('[aria-hidden="true"]').innerText()).toBe("🎤");

    await screenshots(page, "chat-media-marks");
    await page.setViewportSize(PHONE);
    expect(await fitsWidth(page)).toBe(true);
    expect(problems).toEqual([]);
  });
});

/** A PNG drawn in the page (`width`×`height`, a sky over a field), as base64. */
const DRAW_PNG = (width: number, height: number) => `(() => {
  const canvas = document.createElement("canvas");
  canvas.width = ${width};
  canvas.height = ${height};
  const context = canvas.getContext("2d");
  context.fillStyle = "#8ec5ff";
  context.fillRect(0, 0, canvas.width, canvas.height);
  context.fillStyle = "#3a7";
  context.fillRect(0, canvas.height * 0.6, canvas.width, canvas.height * 0.4);
  return canvas.toDataURL("image/png").split(",")[1];
})()`;

/** A turn's chat-completion requests the stand-in model got whose last message holds `words`, as JSON
 * (not fact extraction's, which reads the same words after the turn: agents/fact-extraction.ts). */
async function modelRequestsWith(words: string): Promise<string[]> {
  const requests = (await (await fetch(`${standIn}/__requests`)).json()) as Array<{ messages: unknown[] }>;
  return requests
    .filter((r) => !JSON.stringify(r.messages[0]).includes(FACT_EXTRACTION_MARKER))
    .map((r) => JSON.stringify(r.messages.at(-1)))
    .filter((last) => last.includes(words));
}

describe("an image from the web composer", () => {
  it("is picked or pasted, made small, seen by the model, and leaves the conversation once answered", async () => {
    const { page, problems } = await signedInPage(session);
    const box = page.getByRole("textbox", { name: "Message" });
    const picker = page.getByTestId("image-picker");

    // Not an image: said at once, nothing attached.
    await picker.setInputFiles({ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("hello") });
    await expect.poll(() => page.getByRole("alert").innerText(), { timeout: 5_000 }).toContain("isn't an image I can take");
    expect(await page.getByRole("button", { name: "Remove image" }).count()).toBe(0);

    // Picked: a small image goes as it is, shown until it is sent.
    const small = Buffer.from(await page.evaluate<string>(DRAW_PNG(600, 400)), "base64");
    await picker.setInputFiles({ name: "field.png", mimeType: "image/png", buffer: small });
    await page.getByRole("img", { name: "Attached: field.png" }).waitFor();
    expect(await page.getByRole("alert").count()).toBe(0);
    await box.fill("This is my teapot");
    await screenshots(page, "chat-media-attached");
    // While the model is at work the message shows the image it carries.
    const release = await hang(standIn, "chat", "my teapot");
    await box.press("Enter");
    const mine = page.getByRole("article", { name: "From you" }).filter({ hasText: "my teapot" });
    try {
      await mine.getByRole("img", { name: "Sent with this message" }).waitFor({ timeout: 10_000 });
      await screenshots(page, "chat-media-sending");
    } finally {
      await release();
    }
    const reply = page.getByRole("article", { name: "From Soma" }).last();
    await expect.poll(() => reply.innerText(), { timeout: 20_000 }).toContain("In your photo I see a picture.");
    expect((await modelRequestsWith("my teapot")).at(-1)).toContain("data:image/png;base64,");
    expect(await mine.getByTestId("message-mark").allInnerTexts()).toEqual(["📷 Photo"]);
    // Answered: the bytes leave the conversation, here and in what the next turn sends the model.
    await expect.poll(() => mine.locator("img").count(), { timeout: 10_000 }).toBe(0);
    expect(await page.getByRole("img", { name: "Attached: field.png" }).count()).toBe(0);

    // Pasted: a photo larger than 1600 px is drawn smaller, as a JPEG, before it is sent.
    await box.focus();
    const wide = await page.evaluate<string>(DRAW_PNG(3200, 2000));
    await page.evaluate(`(() => {
      const bytes = Uint8Array.from(atob("${wide}"), (c) => c.charCodeAt(0));
      const files = new DataTransfer();
      files.items.add(new File([bytes], "wide.png", { type: "image/png" }));
      document.activeElement.dispatchEvent(new ClipboardEvent("paste", { clipboardData: files, bubbles: true, cancelable: true }));
    })()`);
    const attached = page.getByRole("img", { name: "Attached: wide.png" });
    await attached.waitFor();
    const size = await attached.evaluate((img) => {
      const shown = img as unknown as { naturalWidth: number; naturalHeight: number; src: string };
      return [shown.naturalWidth, shown.naturalHeight, shown.src.slice(0, 23)];
    });
    expect(size).toEqual([1600, 1000, "data:image/jpeg;base64,"]);
    expect(await box.inputValue()).toBe("");
    await screenshots(page, "chat-media-pasted");
    // An image alone is a message too.
    await box.press("Enter");
    await expect.poll(() => page.getByRole("article", { name: "From Soma" }).count(), { timeout: 20_000 }).toBe(2);
    await expect.poll(() => reply.innerText(), { timeout: 20_000 }).toContain("In your photo I see a picture.");
    const pasted = page.getByRole("article", { name: "From you" }).last();
    expect(await pasted.getByTestId("message-mark").allInnerTexts()).toEqual(["📷 Photo"]);
    expect(await pasted.locator(".typed").count()).toBe(0);
    // The model got the new image, and of the first one only the words.
    const requests = (await (await fetch(`${standIn}/__requests`)).json()) as Array<{ messages: unknown[] }>;
    const last = JSON.stringify(requests.filter((r) => JSON.stringify(r.messages).includes("my teapot")).at(-1));
    expect(last).toContain("data:image/jpeg;base64,");
    expect(last).not.toContain("data:image/png");
    await expect.poll(() => pasted.locator("img").count(), { timeout: 10_000 }).toBe(0);
    await screenshots(page, "chat-media-web-photo");
    await page.setViewportSize(PHONE);
    expect(await fitsWidth(page)).toBe(true);
    expect(problems).toEqual([]);
  });
});
