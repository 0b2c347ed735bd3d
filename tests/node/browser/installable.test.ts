// Guards issue 27's installable web app in Debian's Chromium against `npm start`: Chromium's own
// installability check finds nothing missing (manifest, icons, service worker), the manifest is what a
// home screen needs (name, icons 192 and 512 with a maskable one, start URL and scope, standalone, the
// dark theme's colours), and the app opened offline is its kept shell saying it is offline and showing
// no data; back online it loads by itself; going offline inside the app says so.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fitsWidth, PHONE, screenshots, signInAsDeveloper, openPage, startSession, type Session } from "./harness";

let session: Session;
const stops: Array<() => Promise<void>> = [];
beforeAll(async () => {
  session = await startSession();
}, 120_000);
afterAll(async () => {
  for (const stop of stops) await stop();
  await session?.stop();
});

interface Manifest {
  name: string;
  short_name: string;
  start_url: string;
  scope: string;
  display: string;
  background_color: string;
  theme_color: string;
  icons: Array<{ src: string; sizes: string; type: string; purpose: string }>;
}

describe("the installable web app", () => {
  it("passes Chromium's installability check, with a manifest a home screen needs", async () => {
    // A profile of its own: Chromium installs nothing from an incognito context, which every other
    // page of the suites is (its check answers "in-incognito" and nothing else there).
    const context = await chromium.launchPersistentContext(mkdtempSync(`${tmpdir()}/soma-profile-`), {
      executablePath: "/usr/bin/chromium",
      args: ["--no-sandbox", "--headless", "--disable-gpu", "--no-first-run"],
    });
    stops.push(() => context.close());
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));
    const base = session.app.url;
    await signInAsDeveloper(page, base);
    // The service worker is registered after load, and controls the page once active.
    await expect
      .poll(() => page.evaluate<string | null>("navigator.serviceWorker.ready.then((r) => r.active && r.active.state)"), {
        timeout: 15_000,
      })
      .toBe("activated");
    const cdp = await context.newCDPSession(page);
    const { installabilityErrors } = (await cdp.send("Page.getInstallabilityErrors")) as { installabilityErrors: unknown[] };
    expect(installabilityErrors).toEqual([]);
    const { url, errors } = (await cdp.send("Page.getAppManifest")) as { url: string; errors: unknown[] };
    expect({ url, errors }).toEqual({ url: `${base}/manifest.webmanifest`, errors: [] });

    const response = await page.request.get(`${base}/manifest.webmanifest`);
    expect(response.headers()["content-type"]).toMatch(/^application\/manifest\+json/);
    const manifest = (await response.json()) as Manifest;
    expect(manifest).toMatchObject({
      short_name: "Soma",
      start_url: "/app",
      scope: "/",
      display: "standalone",
      background_color: "#0f1117",
      theme_color: "#0f1117",
    });
    expect(manifest.icons.map((i) => `${i.sizes} ${i.purpose}`)).toEqual(["192x192 any", "512x512 any", "512x512 maskable"]);
    for (const icon of manifest.icons) {
      const image = await page.request.get(`${base}${icon.src}`);
      expect(image.headers()["content-type"]).toBe("image/png");
      const bytes = await image.body();
      // A PNG's IHDR: width and height at bytes 16–23, as the manifest says.
      expect(`${bytes.readUInt32BE(16)}x${bytes.readUInt32BE(20)}`).toBe(icon.sizes);
    }
    expect(problems).toEqual([]);
  });

  it("opens offline as its shell saying so, with no data, and loads once back online", async () => {
    const { page, problems } = await openPage(session.browser, { allow: /Failed to load resource|ERR_INTERNET_DISCONNECTED/ });
    const base = session.app.url;
    await signInAsDeveloper(page, base);
    await page.getByRole("textbox", { name: "Message", exact: true }).fill("I just finished reading Dune");
    await page.keyboard.press("Enter");
    const conversation = page.getByRole("log", { name: "Conversation" });
    await expect.poll(() => conversation.innerText(), { timeout: 20_000 }).toContain("Noted: Dune (book)");
    await expect
      .poll(() => page.evaluate<boolean>("navigator.serviceWorker.ready.then(() => Boolean(navigator.serviceWorker.controller))"), {
        timeout: 15_000,
      })
      .toBe(true);

    // Inside the app: the network goes, and the app says so above the page.
    await page.context().setOffline(true);
    await expect.poll(() => page.getByRole("status").filter({ hasText: "You're offline" }).count()).toBe(1);
    await screenshots(page, "app-offline-banner");

    // Opened offline (as an installed app would be): the kept shell, saying it is offline, nothing else.
    await page.goto(`${base}/app/memories`);
    await expect.poll(() => page.getByRole("status").innerText()).toContain("You're offline.");
    expect(await page.getByText("Dune").count()).toBe(0);
    expect(await page.getByRole("navigation", { name: "Pages" }).count()).toBe(0);
    // Styled from the kept files too (the dark theme's background), not a bare page.
    expect(await page.evaluate<string>("getComputedStyle(document.body).backgroundColor")).toBe("rgb(15, 17, 23)");
    await screenshots(page, "app-opened-offline");
    await page.setViewportSize(PHONE);
    expect(await fitsWidth(page)).toBe(true);

    // Back online: it loads by itself, the person's memories and all.
    await page.context().setOffline(false);
    await expect.poll(() => page.getByRole("link", { name: /Dune/ }).count(), { timeout: 15_000 }).toBeGreaterThan(0);
    expect(await page.getByText("You're offline").count()).toBe(0);
    expect(problems.filter((p) => !/offline|network/i.test(p))).toEqual([]);
  });
});
