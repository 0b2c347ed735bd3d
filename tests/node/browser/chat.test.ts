// Guards the chat page as a person uses it, in Debian's Chromium against `npm start`: keyboard-only
// sending (Enter sends, Shift+Enter breaks the line), the streamed reply labelled with channel and time,
// memory chips that open the memory, the notice for a refused message, a dropped connection shown and
// recovered, and the Telegram conversation showing up on the web with its channel.
import type { WebSocketRoute } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { fitsWidth, openPage, screenshots, signInAsDeveloper, startSession, type Session } from "./harness";

const standIn = inject("standInUrl");
const WEBHOOK_SECRET = "browser-test-secret";
let session: Session;

beforeAll(async () => {
  session = await startSession({
    TELEGRAM_BOT_TOKEN: "515151:browser-test-token",
    TELEGRAM_WEBHOOK_SECRET: WEBHOOK_SECRET,
    TELEGRAM_API_ROOT: standIn,
  });
}, 120_000);
afterAll(() => session?.stop());

let nextUpdate = Math.floor(Math.random() * 1e6);
async function telegram(chatId: number, text: string): Promise<void> {
  const updateId = ++nextUpdate;
  const response = await fetch(`${session.app.url}/api/messenger/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": WEBHOOK_SECRET },
    body: JSON.stringify({
      update_id: updateId,
      message: {
        message_id: updateId,
        date: Math.floor(Date.now() / 1000),
        chat: { id: chatId, type: "private" },
        from: { id: chatId, is_bot: false, first_name: "Tess" },
        text,
      },
    }),
  });
  expect(response.status).toBe(200);
}

async function botTexts(chatId: number): Promise<string[]> {
  const response = await fetch(`${standIn}/__calls?chat_id=${chatId}&method=sendMessage`);
  return ((await response.json()) as Array<{ payload: { text: string } }>).map((c) => c.payload.text);
}

/** The sign-in link the bot sent to `chatId` in answer to /login. */
async function loginLink(chatId: number): Promise<string> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const link = (await botTexts(chatId)).map((t) => /https?:\/\/\S+\/auth\/link\/\S+/.exec(t)?.[0]).find(Boolean);
    if (link) return link;
    if (Date.now() > deadline) throw new Error(`the bot sent no sign-in link to ${chatId}: ${JSON.stringify(await botTexts(chatId))}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe("the chat page", () => {
  it("sends with Enter, breaks lines with Shift+Enter, streams the reply with channel, time and memory chips", async () => {
    const { page, problems } = await openPage(session.browser);
    await page.goto(`${session.app.url}/app`);
    expect(new URL(page.url()).pathname).toBe("/login");
    await signInAsDeveloper(page, session.app.url);
    await expect.poll(() => page.getByText("Tell me something you read").count()).toBe(1);
    await screenshots(page, "chat-empty");

    // Keyboard only: the message box has focus on arrival.
    const box = page.getByRole("textbox", { name: "Message" });
    expect(
      await box.evaluate((el) => (el as unknown as { ownerDocument: { activeElement: unknown } }).ownerDocument.activeElement === el),
    ).toBe(true);
    await page.keyboard.type("I just finished reading Dune");
    await page.keyboard.press("Enter");
    const reply = page.getByRole("article", { name: "From Soma" }).last();
    await expect.poll(() => reply.innerText(), { timeout: 15_000 }).toContain("Noted: Dune (book)");
    expect(await box.inputValue()).toBe("");
    const mine = page.getByRole("article", { name: "From you" }).last();
    expect(await mine.innerText()).toMatch(/^You · Web · \d\d:\d\d\n+I just finished reading Dune$/);
    expect(await reply.innerText()).toMatch(/^Soma · Web · \d\d:\d\d/);
    const chip = page.getByRole("link", { name: "remembered Dune · book" });
    expect(await chip.count()).toBe(1);

    // Shift+Enter is a new line in the same message; Enter then sends both lines as one.
    await box.focus();
    await page.keyboard.type("Which books did I read?");
    await page.keyboard.press("Shift+Enter");
    await page.keyboard.type("All of them");
    expect(await box.inputValue()).toBe("Which books did I read?\nAll of them");
    expect(await page.getByRole("article", { name: "From you" }).count()).toBe(1);
    await page.keyboard.press("Enter");
    await expect
      .poll(() => page.getByRole("article", { name: "From you" }).last().innerText(), { timeout: 15_000 })
      .toContain("Which books did I read?\nAll of them");
    await expect.poll(() => page.getByRole("link", { name: "recalled 1" }).count(), { timeout: 15_000 }).toBe(1);
    await screenshots(page, "chat-conversation");
    expect(await fitsWidth(page)).toBe(true);

    // A chip opens the memory it is about; back returns to the conversation.
    await chip.click();
    await expect.poll(() => page.getByRole("heading", { level: 1 }).innerText(), { timeout: 10_000 }).toBe("Dune");
    expect(new URL(page.url()).pathname).toBe("/app/memories");
    await page.goBack();
    await page.getByRole("link", { name: "recalled 1" }).click();
    await expect.poll(() => page.getByRole("heading", { level: 1 }).innerText(), { timeout: 10_000 }).toBe("Dune");
    await page.getByRole("link", { name: "Chat" }).click();
    await box.waitFor();

    // A refused message: the agent's notice, said plainly, and the composer still works.
    await box.fill("x".repeat(8001));
    await box.press("Enter");
    await expect.poll(() => page.getByRole("alert").innerText(), { timeout: 10_000 }).toContain("longer than 8,000 characters");
    await screenshots(page, "chat-refused");
    // Even an unbroken 8,001-character line wraps: nothing scrolls sideways on a phone.
    await page.setViewportSize({ width: 375, height: 740 });
    expect(await fitsWidth(page)).toBe(true);
    expect(problems).toEqual([]);
  });

  it("says when the connection drops and recovers by itself", async () => {
    const { page, problems } = await openPage(session.browser, { allow: /WebSocket/ });
    const sockets: WebSocketRoute[] = [];
    let refuse = false;
    await page.routeWebSocket(/\/api\/agent/, (ws) => {
      if (refuse) return void ws.close({ code: 1011, reason: "test: server away" });
      ws.connectToServer();
      sockets.push(ws);
    });
    await signInAsDeveloper(page, session.app.url);
    await expect.poll(() => sockets.length, { timeout: 10_000 }).toBeGreaterThan(0);
    expect(await page.getByText("Connection lost").count()).toBe(0);

    refuse = true;
    for (const ws of sockets) await ws.close({ code: 1006, reason: "test: dropped" }).catch(() => {});
    const notice = page.getByRole("alert").filter({ hasText: "Connection lost. Reconnecting…" });
    await expect.poll(() => notice.count(), { timeout: 10_000 }).toBe(1);
    await screenshots(page, "chat-connection-lost");

    refuse = false;
    await page.getByRole("button", { name: "Reconnect now" }).click();
    await expect.poll(() => notice.count(), { timeout: 20_000 }).toBe(0);
    // The conversation works again over the new socket.
    await page.getByRole("textbox", { name: "Message" }).fill("I visited Lisbon");
    await page.keyboard.press("Enter");
    await expect.poll(() => page.getByRole("link", { name: "remembered Lisbon · place" }).count(), { timeout: 15_000 }).toBe(1);
    expect(problems).toEqual([]);
  });

  it("shows the Telegram conversation on the web, each message labelled with its channel", async () => {
    const chatId = 710_000_000 + Math.floor(Math.random() * 9_000_000);
    await telegram(chatId, "I just finished reading Anathem");
    await telegram(chatId, "/login");
    const link = await loginLink(chatId);

    const { page, problems } = await openPage(session.browser);
    await page.goto(link);
    await page.getByRole("button", { name: "Continue to Soma" }).click();
    await page.waitForURL(`${session.app.url}/app`);
    const told = page.getByRole("article", { name: "From you" }).first();
    await expect
      .poll(() => told.innerText(), { timeout: 10_000 })
      .toMatch(/^You · Telegram(?: · [^\n]+)?\n+I just finished reading Anathem$/);
    expect(await page.getByRole("article", { name: "From Soma" }).first().innerText()).toMatch(
      /^Soma · Telegram(?: · [^\n]+)?\n+.*Anathem/,
    );

    // A Telegram message while the page is open arrives live, with its time.
    await telegram(chatId, "I watched Arrival");
    const live = page.getByRole("article", { name: "From you" }).filter({ hasText: "I watched Arrival" });
    await expect.poll(() => live.innerText(), { timeout: 20_000 }).toMatch(/^You · Telegram · \d\d:\d\d\n+I watched Arrival$/);
    await expect.poll(() => page.getByRole("link", { name: "remembered Arrival · movie" }).count(), { timeout: 20_000 }).toBe(1);
    await screenshots(page, "chat-telegram");
    expect(problems).toEqual([]);
  });

  it("serves the built files with the same security headers as the pages", async () => {
    for (const path of ["/styles.css", "/favicon.svg"]) {
      const response = await fetch(`${session.app.url}${path}`);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-security-policy")).toContain("default-src 'self'");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("x-frame-options")).toBe("DENY");
    }
  });
});
