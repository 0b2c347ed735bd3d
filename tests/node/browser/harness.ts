// Shared by the browser suites: one `npm start` and one Debian Chromium (playwright-core) per file,
// pages that collect console errors, the developer sign-in, and screenshots at phone and desktop width
// under test-results/screenshots/ (git-ignored) for looking at by eye.
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { chromium, type Browser, type Page } from "playwright-core";
import { expect } from "vitest";
import { start, type Running } from "../../../ops/start";
import { freePort } from "../helpers";

const SCREENSHOTS = fileURLToPath(new URL("../../../test-results/screenshots/", import.meta.url));
export const PHONE = { width: 375, height: 740 };
const DESKTOP = { width: 1280, height: 800 };

export interface Session {
  app: Running;
  browser: Browser;
  stop(): Promise<void>;
}

/** `npm start` on a free port with its own state directory (plus `env`), and a headless Chromium. */
export async function startSession(env: Record<string, string> = {}): Promise<Session> {
  const app = await start(
    { PORT: String(await freePort()), SOMA_STATE_DIR: mkdtempSync(`${tmpdir()}/soma-browser-`), DATABASE_URL: "", ...env },
    () => {},
  );
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: [
      "--no-sandbox",
      "--headless",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
  return {
    app,
    browser,
    stop: async () => {
      await browser.close().catch(() => {});
      await app.stop();
    },
  };
}

export interface WatchedPage {
  page: Page;
  /** Page errors and console errors so far (a test ends by expecting none). */
  problems: string[];
}

/** A new page in its own context (own cookies) at desktop width, collecting errors. */
export async function openPage(browser: Browser, options: { allow?: RegExp } = {}): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport: DESKTOP, timezoneId: "Europe/Berlin" });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(error.message));
  page.on("console", (message) => {
    if (message.type() !== "error" || /favicon/.test(message.text())) return;
    if (options.allow?.test(message.text())) return;
    problems.push(message.text());
  });
  return { page, problems };
}

/** Signs in with the local developer button and waits for the chat. */
export async function signInAsDeveloper(page: Page, baseUrl: string): Promise<void> {
  await page.goto(`${baseUrl}/app`);
  await page.getByRole("button", { name: "Sign in as the developer" }).click();
  await page.waitForURL(`${baseUrl}/app`);
  await page.getByRole("textbox", { name: "Message", exact: true }).waitFor();
}

/** Saves `name`-375.png and `name`-1280.png (the whole page unless it is very long), then back to desktop width. */
export async function screenshots(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  for (const size of [PHONE, DESKTOP]) {
    await page.setViewportSize(size);
    // Let layout settle after the resize (and smooth scrolling end) before the picture.
    await page.evaluate("new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))");
    const height = await page.evaluate<number>("document.documentElement.scrollHeight");
    await page.screenshot({ path: `${SCREENSHOTS}${name}-${size.width}.png`, fullPage: height <= 2400 });
  }
}

/**
 * A page's loading and error states and its recovery, with screenshots `shot`-loading and -error: the
 * `api` route is held until "Loading `what`…" shows, answers the server's 500 after a reload, and
 * "Try again" brings the page back (`ready` true again).
 */
export async function checkLoadStates(
  page: Page,
  options: { api: string; open: () => Promise<unknown>; what: string; shot: string; ready: () => Promise<boolean> },
): Promise<void> {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let fail = false;
  await page.route(options.api, async (route) => {
    if (fail) return route.fulfill({ status: 500, json: { error: { code: "internal", message: "Something went wrong on our side." } } });
    await held;
    return route.continue();
  });
  await options.open();
  await expect.poll(() => page.getByText(`Loading ${options.what}…`).count(), { timeout: 10_000 }).toBe(1);
  await screenshots(page, `${options.shot}-loading`);
  release();
  await expect.poll(options.ready, { timeout: 10_000 }).toBe(true);
  fail = true;
  await page.reload();
  const title = options.what.charAt(0).toUpperCase() + options.what.slice(1);
  await expect
    .poll(() => page.getByRole("alert").innerText(), { timeout: 10_000 })
    .toContain(`${title} could not be loaded: Something went wrong on our side.`);
  await screenshots(page, `${options.shot}-error`);
  fail = false;
  await page.getByRole("button", { name: "Try again" }).click();
  await expect.poll(options.ready, { timeout: 10_000 }).toBe(true);
  await page.unroute(options.api);
}

/** True when nothing on the page is wider than the viewport (no sideways scrolling at phone width). */
export async function fitsWidth(page: Page): Promise<boolean> {
  // A string: the browser evaluates it, and the Node tsconfig has no DOM types.
  return page.evaluate<boolean>("document.documentElement.scrollWidth <= window.innerWidth");
}

/** Runs `work` against the app's database as its owner: how the suites seed what a person would have. */
export async function asOwner<T>(session: Session, work: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = postgres(session.app.databaseUrl, { max: 1, onnotice: () => {} });
  try {
    return await work(sql);
  } finally {
    await sql.end();
  }
}

/** A page signed in as the local developer, with the console watched, and the developer's id. */
export async function signedInPage(session: Session, options: { allow?: RegExp } = {}): Promise<WatchedPage & { userId: string }> {
  const watched = await openPage(session.browser, options);
  await signInAsDeveloper(watched.page, session.app.url);
  const { id } = (await watched.page.evaluate(() => fetch("/api/me").then((r) => r.json()))) as { id: string };
  return { ...watched, userId: id };
}
