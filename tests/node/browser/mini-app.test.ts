// Guards the memory center as a Telegram Mini App (issue 29), in Debian's Chromium against `npm start`:
// the page opened the way Telegram's clients open it — launch parameters in the URL's fragment, initData
// signed with the test bot's token, TelegramWebviewProxy to post to (as on phones) — lands signed in as
// that person and shows what they told the bot, in Telegram's light and dark themes at 375 px; the
// BackButton, the MainButton, the closing confirmation and haptics reach Telegram; forged, stale and
// other-bot launches are refused and show no one's memories; and it works in a cross-site iframe (the
// web client), where no cookie is sent.
import { createServer, type Server } from "node:http";
import type { BrowserContext, Frame, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { launchFragment, signedInitData, TELEGRAM_THEMES, type LaunchUser } from "../../setup/telegram-mini-app";
import { waitFor } from "../wait";
import { fitsWidth, PHONE, screenshots, startSession, type Session } from "./harness";

const standIn = inject("standInUrl");
const BOT_TOKEN = "535353:mini-app-token";
const WEBHOOK_SECRET = "mini-app-secret";
let session: Session;
const user: LaunchUser = { id: 610_000_000 + Math.floor(Math.random() * 1e6), first_name: "Tess", username: "tess" };

beforeAll(async () => {
  session = await startSession({ TELEGRAM_BOT_TOKEN: BOT_TOKEN, TELEGRAM_WEBHOOK_SECRET: WEBHOOK_SECRET, TELEGRAM_API_ROOT: standIn });
  // Tess tells the bot about a book first: the Mini App must show it.
  const response = await fetch(`${session.app.url}/api/messenger/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": WEBHOOK_SECRET },
    body: JSON.stringify({
      update_id: user.id,
      message: {
        message_id: 1,
        date: Math.floor(Date.now() / 1000),
        chat: { id: user.id, type: "private" },
        from: { id: user.id, is_bot: false, first_name: "Tess" },
        text: "I just finished reading Dune by Frank Herbert",
      },
    }),
  });
  expect(response.status).toBe(200);
  await waitFor(
    async () => ((await (await fetch(`${standIn}/__calls?chat_id=${user.id}&method=sendMessage`)).json()) as unknown[]).length === 1,
    30_000,
    "the bot's answer",
  );
}, 120_000);
afterAll(() => session?.stop());

/** What the page posted to Telegram (method, params), as a phone's TelegramWebviewProxy receives it. */
const posted = (page: Page | Frame) =>
  page.evaluate<Array<[string, Record<string, unknown> | null]>>(
    "(window.__telegram ?? []).map(([name, data]) => [name, data ? JSON.parse(data) : null])",
  );
const lastPosted = async (page: Page, method: string) => (await posted(page)).filter(([name]) => name === method).at(-1)?.[1];

/** Telegram telling the page something, as its clients do (window.Telegram.WebView.receiveEvent). */
const telegramSays = (page: Page, event: string, data?: unknown) =>
  page.evaluate(`window.Telegram.WebView.receiveEvent(${JSON.stringify(event)}, ${JSON.stringify(data ?? null)})`);

/** A phone-sized page inside a Telegram client: its proxy records what the page posts. */
async function telegramPage(): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await session.browser.newContext({ viewport: PHONE, timezoneId: "Europe/Berlin" });
  await context.addInitScript(
    `window.__telegram = []; window.TelegramWebviewProxy = { postEvent(name, data) { window.__telegram.push([name, data ?? null]); } };`,
  );
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(error.message));
  // A refused launch is a real 400/401/403 answer, which Chromium logs.
  page.on("console", (m) => m.type() === "error" && !/status of 40[013]/.test(m.text()) && problems.push(m.text()));
  return { context, page, problems };
}

async function open(page: Page, initData: string, theme: keyof typeof TELEGRAM_THEMES, path = "/tg") {
  await page.goto(`${session.app.url}${path}#${launchFragment(initData, TELEGRAM_THEMES[theme])}`);
}

const memoryNames = (page: Page | Frame) => page.getByTestId("memory").locator(".memory-name").allInnerTexts();

describe("the Mini App", () => {
  it("opens signed in as the Telegram person, in Telegram's light theme, with what they told the bot", async () => {
    const { context, page, problems } = await telegramPage();
    await open(page, await signedInitData(BOT_TOKEN, { user }), "light");
    await expect.poll(() => memoryNames(page), { timeout: 15_000 }).toContain("Dune");
    // The launch data left the address bar; Telegram was told the app is ready, and its colours are used.
    expect(new URL(page.url()).hash).toBe("");
    expect(new URL(page.url()).pathname).toBe("/tg");
    const methods = (await posted(page)).map(([name]) => name);
    expect(methods).toEqual(expect.arrayContaining(["web_app_ready", "web_app_expand", "web_app_request_safe_area"]));
    expect(await page.evaluate("getComputedStyle(document.body).backgroundColor")).toBe("rgb(239, 239, 243)");
    expect(await page.evaluate("getComputedStyle(document.documentElement).colorScheme")).toBe("light");
    // No chat page inside Telegram: the chat is Telegram's own.
    expect(await page.getByRole("navigation", { name: "Pages" }).getByRole("link").allInnerTexts()).toEqual([
      "Memories",
      "Facts",
      "Reminders",
      "Settings",
    ]);
    expect(await lastPosted(page, "web_app_setup_back_button")).toEqual({ is_visible: false });
    expect(await fitsWidth(page)).toBe(true);
    await screenshots(page, "mini-app-light");
    await page.setViewportSize(PHONE);

    // A memory's page: Telegram's BackButton appears and goes back.
    await page.getByRole("link", { name: "Dune" }).click();
    await page.getByRole("heading", { name: "Dune" }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/tg/memories");
    expect(await lastPosted(page, "web_app_setup_back_button")).toEqual({ is_visible: true });

    // Editing: the MainButton saves, and closing asks first while the edit is unsaved.
    await page.getByRole("button", { name: "Edit" }).click();
    expect(await lastPosted(page, "web_app_setup_main_button")).toMatchObject({ is_visible: true, is_active: false, text: "Save" });
    await page.getByRole("textbox", { name: "Name" }).fill("Dune Messiah");
    await expect.poll(() => lastPosted(page, "web_app_setup_closing_behavior")).toEqual({ need_confirmation: true });
    expect(await lastPosted(page, "web_app_setup_main_button")).toMatchObject({ is_visible: true, is_active: true, color: "#2481cc" });
    await screenshots(page, "mini-app-edit");
    await page.setViewportSize(PHONE);
    await telegramSays(page, "main_button_pressed");
    await page.getByRole("heading", { name: "Dune Messiah" }).waitFor();
    expect(await lastPosted(page, "web_app_setup_closing_behavior")).toEqual({ need_confirmation: false });
    expect(await lastPosted(page, "web_app_setup_main_button")).toEqual({ is_visible: false });

    await telegramSays(page, "back_button_pressed");
    await expect.poll(() => memoryNames(page)).toContain("Dune Messiah");
    expect(await lastPosted(page, "web_app_setup_back_button")).toEqual({ is_visible: false });

    // A reload inside Telegram keeps the session (no fresh launch data needed).
    await page.reload();
    await expect.poll(() => memoryNames(page), { timeout: 15_000 }).toContain("Dune Messiah");

    // The other pages, in Telegram's light theme.
    for (const [link, ready] of [
      ["Facts", "does not know anything about you yet"],
      ["Reminders", "Nothing coming up"],
      ["Settings", "Timezone"],
    ] as const) {
      await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: link }).click();
      await page.getByText(ready).first().waitFor({ timeout: 15_000 });
      expect(new URL(page.url()).pathname).toBe(`/tg/${link.toLowerCase()}`);
      expect(await fitsWidth(page)).toBe(true);
      await screenshots(page, `mini-app-${link.toLowerCase()}-light`);
      await page.setViewportSize(PHONE);
    }
    expect(problems).toEqual([]);
    await context.close();
  });

  it("follows Telegram's dark theme, and its insets", async () => {
    const { context, page, problems } = await telegramPage();
    await open(page, await signedInitData(BOT_TOKEN, { user }), "dark", "/tg/settings");
    await page.getByRole("heading", { name: "Timezone" }).waitFor({ timeout: 15_000 });
    expect(await page.evaluate("getComputedStyle(document.body).backgroundColor")).toBe("rgb(24, 24, 24)");
    expect(await page.evaluate("getComputedStyle(document.documentElement).colorScheme")).toBe("dark");
    // Inside Telegram: no sign-out (Telegram closes the app) and the export comes through the bot.
    expect(await page.getByRole("button", { name: "Sign out" }).count()).toBe(0);
    expect(await page.getByText("Send /export to the bot").count()).toBe(1);
    await telegramSays(page, "safe_area_changed", { top: 24, bottom: 16, left: 0, right: 0 });
    await telegramSays(page, "content_safe_area_changed", { top: 40, bottom: 0, left: 0, right: 0 });
    expect(await page.evaluate("getComputedStyle(document.body).paddingTop")).toBe("64px");
    expect(await fitsWidth(page)).toBe(true);
    await telegramSays(page, "safe_area_changed", { top: 0, bottom: 0, left: 0, right: 0 });
    await telegramSays(page, "content_safe_area_changed", { top: 0, bottom: 0, left: 0, right: 0 });
    await page.getByRole("link", { name: "Memories" }).click();
    await expect.poll(() => memoryNames(page), { timeout: 15_000 }).toContain("Dune Messiah");
    await screenshots(page, "mini-app-dark");
    // Telegram switches to light while open: the page follows.
    await telegramSays(page, "theme_changed", { theme_params: TELEGRAM_THEMES.light });
    expect(await page.evaluate("getComputedStyle(document.body).backgroundColor")).toBe("rgb(239, 239, 243)");
    expect(problems).toEqual([]);
    await context.close();
  });

  it("refuses forged, stale and other-bot launch data, and shows no one's memories", async () => {
    const signed = await signedInitData(BOT_TOKEN, { user });
    const forged = signed.replace(/user=[^&]+/, `user=${encodeURIComponent(JSON.stringify({ ...user, first_name: "Mallory" }))}`);
    const stale = await signedInitData(BOT_TOKEN, { user, authDate: Math.floor(Date.now() / 1000) - 2 * 3600 });
    const otherBot = await signedInitData("777777:another-bot", { user });
    const cases: Array<[string, string, RegExp]> = [
      ["forged", forged, /signature on this launch does not match this bot/],
      ["stale", stale, /more than 60 minutes old/],
      ["other-bot", otherBot, /signature on this launch does not match this bot/],
    ];
    for (const [name, initData, message] of cases) {
      const { context, page, problems } = await telegramPage();
      const asked: string[] = [];
      page.on("request", (request) => asked.push(new URL(request.url()).pathname));
      await open(page, initData, "light", "/tg/memories");
      await page.getByRole("heading", { name: "Soma could not sign you in" }).waitFor({ timeout: 15_000 });
      expect(await page.getByRole("alert").innerText()).toMatch(message);
      expect(await page.getByText("Dune").count()).toBe(0);
      expect(asked.filter((path) => path.startsWith("/api/"))).toEqual([]);
      if (name === "forged") await screenshots(page, "mini-app-refused");
      await page.setViewportSize(PHONE);
      await page.getByRole("button", { name: "Close" }).click();
      expect(await lastPosted(page, "web_app_close")).toBeNull();
      expect(problems).toEqual([]);
      await context.close();
    }
  });

  it("buzzes on a destructive confirm, and says the session ended once the account is gone", async () => {
    const leaving: LaunchUser = { id: user.id + 1, first_name: "Leaving" };
    const { context, page, problems } = await telegramPage();
    await open(page, await signedInitData(BOT_TOKEN, { user: leaving }), "dark", "/tg/settings");
    await page.getByRole("heading", { name: "Delete everything" }).waitFor({ timeout: 15_000 });
    await page.getByLabel("Type “delete everything” to confirm").fill("delete everything");
    expect(await lastPosted(page, "web_app_trigger_haptic_feedback")).toBeUndefined();
    await page.getByRole("button", { name: "Delete all my data" }).click();
    await page.getByRole("heading", { name: "Your session ended" }).waitFor({ timeout: 15_000 });
    expect(await lastPosted(page, "web_app_trigger_haptic_feedback")).toEqual({ type: "notification", notification_type: "warning" });
    // A reload signs in afresh with the same launch data: the deleted account is not made again.
    await page.reload();
    await page.getByRole("heading", { name: "Soma could not sign you in" }).waitFor({ timeout: 15_000 });
    expect(await page.getByRole("alert").innerText()).toContain("This Soma account was deleted");
    expect(problems).toEqual([]);
    await context.close();
  });

  it("works inside a cross-site iframe (Telegram's web client), with no cookie at all", async () => {
    const fragment = launchFragment(await signedInitData(BOT_TOKEN, { user }), TELEGRAM_THEMES.dark, "weba");
    // The embedding page is on another site (localhost, not 127.0.0.1), as web.telegram.org is.
    const embedder: Server = createServer((_, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(
        `<!doctype html><title>Telegram Web</title><iframe title="Soma" src="${session.app.url}/tg#${fragment}" width="375" height="700"></iframe>`,
      );
    });
    await new Promise<void>((resolve) => embedder.listen(0, "127.0.0.1", resolve));
    const port = (embedder.address() as { port: number }).port;
    const context = await session.browser.newContext({ viewport: { width: 420, height: 760 } });
    const page = await context.newPage();
    const sent: Array<{ cookie?: string; authorization?: string }> = [];
    page.on("request", (request) => {
      if (new URL(request.url()).pathname === "/api/memories") sent.push(request.headers());
    });
    try {
      await page.goto(`http://localhost:${port}/`);
      const frame = page.frame({ url: /\/tg/ })!;
      expect(frame).toBeTruthy();
      await expect.poll(() => memoryNames(frame), { timeout: 15_000 }).toContain("Dune Messiah");
      expect(sent.length).toBeGreaterThan(0);
      expect(sent.every((headers) => headers.cookie === undefined && /^Bearer \S+$/.test(headers.authorization ?? ""))).toBe(true);
      expect(await context.cookies(session.app.url)).toEqual([]);
      // This Chromium denies the frame storage of its own, as browsers blocking third-party cookies do.
      expect(await frame.evaluate("(() => { try { return typeof sessionStorage; } catch (e) { return e.name; } })()")).toBe(
        "SecurityError",
      );
      await screenshots(page, "mini-app-iframe");
    } finally {
      await context.close();
      await new Promise<void>((resolve) => embedder.close(() => resolve()));
    }
  });
});
