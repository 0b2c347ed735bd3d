// Guards the web app as a person uses it, in Debian's Chromium driven by playwright-core, against
// `npm start` (embedded Postgres, offline model): dev sign-in → "I just finished reading Dune" →
// the reply and the memory activity appear → Dune is on the memories page → forget it → gone.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { start, type Running } from "../../ops/start";
import { freePort } from "./helpers";

let app: Running;
let browser: Browser;


beforeAll(async () => {
  app = await start({ PORT: String(await freePort()), SOMA_STATE_DIR: mkdtempSync(`${tmpdir()}/soma-browser-`) }, () => {});
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
});
afterAll(async () => {
  await browser?.close();
  await app?.stop();
});

describe("the web app in a browser", () => {
  it("signs in, remembers a book from chat, shows it, forgets it", async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));
    page.on("console", (message) => {
      if (message.type() === "error" && !/favicon/.test(message.text())) problems.push(message.text());
    });

    await page.goto(`${app.url}/app`);
    expect(new URL(page.url()).pathname).toBe("/login");
    await page.getByRole("button", { name: "Sign in as the developer" }).click();
    await page.waitForURL(`${app.url}/app`);

    await page.getByLabel("Message").fill("I just finished reading Dune");
    await page.getByLabel("Message").press("Enter");
    await expect.poll(() => page.locator(".message.assistant").last().innerText(), { timeout: 15_000 }).toContain("Noted: Dune (book)");
    expect(await page.getByTestId("memory-activity").first().innerText()).toBe("remembered: Dune · book");
    await page.screenshot({ path: `${tmpdir()}/soma-chat.png` });

    // A message over the size limit is refused by the agent with a notice in the chat.
    await page.getByLabel("Message").fill("x".repeat(8001));
    await page.getByLabel("Message").press("Enter");
    await expect.poll(() => page.getByRole("alert").innerText(), { timeout: 10_000 }).toContain("longer than 8,000 characters");

    await page.getByRole("link", { name: "Memories" }).click();
    await expect.poll(() => page.getByTestId("memory").allInnerTexts(), { timeout: 10_000 }).toEqual([
      expect.stringContaining("Dune"),
    ]);
    expect(await page.getByTestId("memory").first().innerText()).toContain("I just finished reading Dune");
    await page.screenshot({ path: `${tmpdir()}/soma-memories.png` });

    await page.getByRole("button", { name: "Forget Dune" }).click();
    await expect.poll(() => page.getByTestId("memory").count(), { timeout: 10_000 }).toBe(0);

    await page.reload();
    await expect.poll(() => page.getByText("Nothing here yet.").count()).toBe(1);
    expect(problems).toEqual([]);
  });

  it("serves the built files with the same security headers as the pages", async () => {
    for (const path of ["/styles.css", "/favicon.svg"]) {
      const response = await fetch(`${app.url}${path}`);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-security-policy")).toContain("default-src 'self'");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("x-frame-options")).toBe("DENY");
    }
  });
});
