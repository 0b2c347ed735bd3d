// Guards imports from other assistants in Settings (issue 30), in Debian's Chromium against `npm start`
// with the offline model: a ChatGPT data export's .zip is read in the browser, previewed (conversations,
// from when to when, the person's messages and the model calls), imported in the background with its
// progress shown, and the person's book then is a memory whose page says it came from that ChatGPT
// conversation; pasted saved memories go the same way; a cut-short file is refused, saying so.
import { strToU8, zipSync } from "fflate";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatGptConversation } from "../../setup/chatgpt-export";
import { fitsWidth, PHONE, screenshots, signedInPage, startSession, type Session } from "./harness";

let session: Session;
beforeAll(async () => {
  session = await startSession();
}, 120_000);
afterAll(() => session?.stop());

const T = 1714723200; // 2024-05-03T08:00:00Z
const CONVERSATIONS = [
  chatGptConversation("c0ffee00-0000-4000-8000-0000000000c1", "Trip ideas", T, [
    ["user", "I just finished reading Piranesi by Susanna Clarke", T + 10],
    ["assistant", "You might like The Name of the Wind by Patrick Rothfuss", T + 20],
  ]),
  chatGptConversation("c0ffee00-0000-4000-8000-0000000000c2", "Weekend", T + 86_400 * 30, [
    ["user", "What should I cook tonight?", T + 86_400 * 30],
  ]),
];

const EXPORT_ZIP = Buffer.from(
  zipSync({
    "conversations.json": strToU8(JSON.stringify(CONVERSATIONS)),
    "user.json": strToU8("{}"),
    "chat.html": strToU8("<html></html>"),
  }),
);

describe("importing from ChatGPT and Claude in Settings", () => {
  let page: Page;
  let problems: string[];

  beforeAll(async () => {
    ({ page, problems } = await signedInPage(session));
    await page.goto(`${session.app.url}/app/settings`);
    await page.getByLabel("File to import").waitFor();
  });
  afterAll(() => expect(problems).toEqual([]));

  it("previews a ChatGPT export's .zip, imports it in the background, and the book is a memory from that conversation", async () => {
    await page.getByLabel("File to import").setInputFiles({ name: "chatgpt-export.zip", mimeType: "application/zip", buffer: EXPORT_ZIP });
    const preview = page.getByRole("group", { name: "Conversations preview" });
    await expect
      .poll(() => preview.innerText(), { timeout: 10_000 })
      .toContain("chatgpt-export.zip holds 2 conversations from ChatGPT, from 3 May 2024 to 2 June 2024, with 2 messages of yours.");
    expect(await preview.innerText()).toContain("about 4 model calls");
    await page.setViewportSize(PHONE);
    expect(await fitsWidth(page)).toBe(true);
    await preview.scrollIntoViewIfNeeded();
    await screenshots(page, "settings-conversations-preview");

    await preview.getByRole("button", { name: "Import conversations" }).click();
    const status = page.locator(".import-progress");
    await expect
      .poll(() => status.innerText(), { timeout: 30_000 })
      .toContain("Imported 2 conversations from ChatGPT: 1 memory and 0 facts added.");
    await page.setViewportSize(PHONE);
    await status.scrollIntoViewIfNeeded();
    await status.screenshot({ path: "test-results/screenshots/settings-conversations-imported-375.png" });

    await page.getByRole("link", { name: "Memories" }).click();
    await page.getByRole("link", { name: "Piranesi" }).click();
    await page.getByRole("heading", { name: "Piranesi" }).waitFor();
    const learned = await page.locator("main").innerText();
    expect(learned).toContain("Told Friday, 3 May 2024 at 10:00");
    expect(learned).toContain("From ChatGPT, «Trip ideas», on Friday, 3 May 2024 at 10:00");
    expect(learned).toContain("I just finished reading Piranesi by Susanna Clarke");
    await screenshots(page, "memory-from-chatgpt");
    await page.getByRole("link", { name: "← All memories" }).click();
    await expect.poll(() => page.getByTestId("memory").locator(".memory-name").allInnerTexts(), { timeout: 10_000 }).toEqual(["Piranesi"]);
  });

  it("imports pasted saved memories, one a line", async () => {
    await page.goto(`${session.app.url}/app/settings`);
    await page
      .getByLabel("Or paste saved memories from ChatGPT or Claude, one a line")
      .fill("Saved memories\n- I just finished reading Dune");
    await page.getByRole("button", { name: "Import pasted memories" }).click();
    await expect
      .poll(() => page.locator(".import-progress").innerText(), { timeout: 30_000 })
      .toContain("Imported your pasted saved memories: 1 memory");
  });

  it("refuses a cut-short conversations.json, saying so", async () => {
    const text = JSON.stringify(CONVERSATIONS);
    await page
      .getByLabel("File to import")
      .setInputFiles({ name: "conversations.json", mimeType: "application/json", buffer: Buffer.from(text.slice(0, text.length / 2)) });
    await expect
      .poll(() => page.getByRole("alert").innerText(), { timeout: 10_000 })
      .toContain("conversations.json cannot be imported: The file is cut short");
    await page.getByRole("button", { name: "Dismiss" }).click();
  });
});
