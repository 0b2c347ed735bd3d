// Guards the Settings page as a person uses it, in Debian's Chromium against `npm start`: the timezone
// preselected from the browser and changed; Telegram and Gmail as linked or not; export downloads the
// file; import previews its counts (writing nothing) before it is applied; sign out; delete everything
// only after typing the phrase — found by visible text and accessible names, photographed at 375 and 1280 px.
import { readFileSync } from "node:fs";
import { unzipSync } from "fflate";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  asOwner,
  checkLoadStates,
  fitsWidth,
  openPage,
  PHONE,
  screenshots,
  signInAsDeveloper,
  startSession,
  type Session,
} from "./harness";

let session: Session;
beforeAll(async () => {
  session = await startSession({
    TELEGRAM_BOT_USERNAME: "soma_browser_bot",
    GOOGLE_CLIENT_ID: "browser-test-client",
    GOOGLE_CLIENT_SECRET: "browser-test-secret",
    TOKEN_ENCRYPTION_KEY: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
  });
}, 120_000);
afterAll(() => session?.stop());

/** A book, its author, how they relate, a fact and a reminder, as the developer's. */
async function seedMemory(userId: string): Promise<void> {
  await asOwner(session, async (sql) => {
    const [source] =
      await sql`insert into sources (user_id, kind, external_id, payload) values (${userId}, 'telegram', '42:7', ${sql.json({ text: "I just finished Dune" })}) returning id`;
    const [dune] =
      await sql`insert into entities (user_id, type, name, normalized_name, source_id) values (${userId}, 'book', 'Dune', 'dune', ${source!.id}) returning id`;
    const [herbert] =
      await sql`insert into entities (user_id, type, name, normalized_name) values (${userId}, 'person', 'Frank Herbert', 'frank herbert') returning id`;
    await sql`insert into edges (user_id, from_id, to_id, type) values (${userId}, ${dune!.id}, ${herbert!.id}, 'written_by')`;
    await sql`insert into facts (user_id, statement, category, subject, confidence, source_id) values (${userId}, 'Reads science fiction', 'preference', 'reading', 0.8, ${source!.id})`;
    await sql`insert into events (user_id, kind, occurred_at, payload, status) values (${userId}, 'reminder', now() - interval '1 day', ${sql.json({ text: "return Dune" })}, 'delivered')`;
  });
}

/** Another person's file made from this one: every id new, other names, another source message. */
function anotherFile(file: string): string {
  const ids = new Map<string, string>();
  return file
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (id) => {
      const fresh = ids.get(id) ?? crypto.randomUUID();
      ids.set(id, fresh);
      return fresh;
    })
    .replaceAll("Frank Herbert", "Stanisław Lem")
    .replaceAll("Dune", "Solaris")
    .replaceAll('"42:7"', '"42:8"');
}

const me = (page: Page) =>
  page.evaluate(() => fetch("/api/me").then((r) => r.json())) as Promise<{ id: string; timezone: string; google: { connected: boolean } }>;
const memoryNames = (page: Page) =>
  page.evaluate(() =>
    fetch("/api/memories")
      .then((r) => r.json() as Promise<{ memories: Array<{ name: string }> }>)
      .then((b) => b.memories.map((m) => m.name).sort()),
  );

describe("the Settings page", () => {
  let page: Page;
  let problems: string[];
  let userId: string;

  beforeAll(async () => {
    // The refused file below is a real 400 answer, and the brief's error state a 500, which Chromium logs.
    ({ page, problems } = await openPage(session.browser, { allow: /status of (400|401|500)/ }));
    await signInAsDeveloper(page, session.app.url);
    ({ id: userId } = await me(page));
    await seedMemory(userId);
    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByRole("heading", { name: "Timezone" }).waitFor();
  });
  afterAll(() => expect(problems).toEqual([]));

  it("preselects the browser's timezone and changes it", async () => {
    const zone = page.getByRole("combobox", { name: "Timezone" });
    expect(await zone.inputValue()).toBe("Europe/Berlin");
    expect(await zone.locator("option:checked").innerText()).toBe("Europe/Berlin (this device)");
    expect(await page.getByRole("button", { name: "Save", exact: true }).isDisabled()).toBe(true);
    await page.setViewportSize(PHONE);
    await expect.poll(() => fitsWidth(page)).toBe(true);
    await screenshots(page, "settings");
    await zone.selectOption("Asia/Tokyo");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await expect.poll(() => page.getByRole("status").innerText(), { timeout: 10_000 }).toBe("Saved: times now follow Asia/Tokyo.");
    expect((await me(page)).timezone).toBe("Asia/Tokyo");
    await page.reload();
    await expect.poll(() => page.getByRole("combobox", { name: "Timezone" }).inputValue(), { timeout: 10_000 }).toBe("Asia/Tokyo");
  });

  it("moves the morning brief to 07:15 on weekdays, turns the weekly review off by keyboard, and goes back to the default", async () => {
    await checkLoadStates(page, {
      api: "**/api/routines",
      open: () => page.reload(),
      what: "your brief and review",
      shot: "settings-routines",
      ready: async () => (await page.getByRole("form", { name: "Morning brief" }).count()) === 1,
    });
    const brief = page.getByRole("form", { name: "Morning brief" });
    const review = page.getByRole("form", { name: "Weekly review" });
    expect(await brief.innerText()).toContain("Comes every day at 08:00 · next");
    expect(await review.innerText()).toContain("Comes every Sunday at 18:00 · next Sun");
    await brief.getByLabel("Time").fill("07:15");
    await brief.getByRole("checkbox", { name: "Saturday" }).uncheck();
    await brief.getByRole("checkbox", { name: "Sunday" }).uncheck();
    expect(await brief.getByText("Not saved yet.").count()).toBe(1);
    await brief.getByRole("button", { name: "Save morning brief" }).click();
    await expect.poll(() => brief.innerText(), { timeout: 10_000 }).toMatch(/Comes every weekday at 07:15 · next (Mon|Tue|Wed|Thu|Fri)/);
    expect(await brief.getByText("Not saved yet.").count()).toBe(0);
    // Off by keyboard: the switch takes focus and Space.
    await review.getByRole("checkbox", { name: "On" }).focus();
    await page.keyboard.press("Space");
    await expect.poll(() => review.innerText(), { timeout: 10_000 }).toContain("Off: Soma won't send it.");
    await page.setViewportSize(PHONE);
    await expect.poll(() => fitsWidth(page)).toBe(true);
    await brief.scrollIntoViewIfNeeded();
    await screenshots(page, "settings-brief-review");
    // Kept: the same after a reload, in Tokyo time.
    await page.reload();
    await expect
      .poll(() => page.getByRole("form", { name: "Morning brief" }).innerText(), { timeout: 10_000 })
      .toContain("Comes every weekday at 07:15");
    expect(await review.innerText()).toContain("Off: Soma won't send it.");
    await brief.getByRole("button", { name: "Back to the default" }).click();
    await expect.poll(() => brief.innerText(), { timeout: 10_000 }).toContain("Comes every day at 08:00");
    expect(await brief.getByRole("button", { name: "Back to the default" }).count()).toBe(0);
  });

  it("shows Telegram and Gmail as they are, with how to link and a connect button", async () => {
    const text = await page.locator(".settings").innerText();
    expect(text).toContain("Not linked. This account began on the web");
    expect(await page.getByRole("link", { name: "@soma_browser_bot" }).getAttribute("href")).toBe("https://t.me/soma_browser_bot");
    expect(await page.getByRole("link", { name: "Connect Gmail (read-only)" }).getAttribute("href")).toBe(
      "/auth/google/start?intent=connect",
    );
    await asOwner(
      session,
      (sql) => sql`insert into oauth_connections (user_id, provider, account_email) values (${userId}, 'google', 'dev@example.com')`,
    );
    await page.reload();
    await expect.poll(() => page.getByText("Connected: Soma reads dev@example.com (read-only).").count(), { timeout: 10_000 }).toBe(1);
    expect(await page.getByRole("link", { name: "Connect Gmail (read-only)" }).count()).toBe(0);
    await screenshots(page, "settings-connected");
    await asOwner(session, (sql) => sql`delete from oauth_connections where user_id = ${userId}`);
  });

  it("downloads the export, previews an import's counts without writing, then imports it", async () => {
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: "Download my data (JSON)" }).click(),
    ]);
    expect(download.suggestedFilename()).toMatch(/^soma-export-\d{4}-\d\d-\d\d\.json$/);
    const exported = readFileSync((await download.path())!, "utf8");
    expect(JSON.parse(exported)).toMatchObject({
      format: "soma-export",
      version: 1,
      entities: [expect.objectContaining({ name: "Dune" }), expect.objectContaining({ name: "Frank Herbert" })],
    });

    const before = await memoryNames(page);
    const picker = page.getByLabel("File to import");
    await picker.setInputFiles({ name: "from-a-friend.json", mimeType: "application/json", buffer: Buffer.from(anotherFile(exported)) });
    const preview = page.getByRole("group", { name: "Import preview" });
    await expect
      .poll(() => preview.innerText(), { timeout: 10_000 })
      .toContain("Importing from-a-friend.json would add 2 memories, 1 fact, 1 relation, 1 event or reminder, 1 source message.");
    await screenshots(page, "settings-import-preview");
    expect(await memoryNames(page)).toEqual(before);

    await preview.getByRole("button", { name: "Import" }).click();
    await expect
      .poll(() => page.getByRole("status").innerText(), { timeout: 10_000 })
      .toContain("Imported from-a-friend.json: added 2 memories, 1 fact, 1 relation, 1 event or reminder, 1 source message.");
    expect(await memoryNames(page)).toEqual(["Dune", "Frank Herbert", "Solaris", "Stanisław Lem"]);
    await screenshots(page, "settings-imported");

    // Its own export again: nothing to add, so nothing to apply.
    await picker.setInputFiles({ name: "mine.json", mimeType: "application/json", buffer: Buffer.from(exported) });
    await expect
      .poll(() => page.getByRole("group", { name: "Import preview" }).innerText(), { timeout: 10_000 })
      .toContain("mine.json holds nothing you do not already have.");
    expect(await page.getByRole("group", { name: "Import preview" }).getByRole("button", { name: "Import" }).count()).toBe(0);
    await page.getByRole("button", { name: "Close" }).click();
  });

  it("downloads the Markdown vault, and takes the same .zip back (nothing new to add)", async () => {
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: "Download as Markdown (Obsidian vault)" }).click(),
    ]);
    expect(download.suggestedFilename()).toMatch(/^soma-vault-\d{4}-\d\d-\d\d\.zip$/);
    const zip = readFileSync((await download.path())!);
    const notes = Object.keys(unzipSync(new Uint8Array(zip)));
    expect(notes).toEqual(
      expect.arrayContaining(["Soma/README.md", "Soma/Facts.md", "Soma/Memories/Dune.md", "Soma/Memories/Frank Herbert.md"]),
    );
    await page.getByLabel("File to import").setInputFiles({ name: "vault.zip", mimeType: "application/zip", buffer: zip });
    await expect
      .poll(() => page.getByRole("group", { name: "Import preview" }).innerText(), { timeout: 10_000 })
      .toContain("vault.zip holds nothing you do not already have.");
    await page.getByRole("button", { name: "Close" }).click();
  });

  it("refuses a file that is neither a Soma export nor another assistant's, saying why", async () => {
    await page
      .getByLabel("File to import")
      .setInputFiles({ name: "notes.json", mimeType: "application/json", buffer: Buffer.from('{"hello": "world"}') });
    await expect
      .poll(() => page.getByRole("alert").innerText(), { timeout: 10_000 })
      .toContain("notes.json cannot be imported: This is neither a Soma export nor a ChatGPT or Claude conversations.json");
    await screenshots(page, "settings-import-error");
    await page.getByRole("button", { name: "Dismiss" }).click();
    expect(await page.getByRole("alert").count()).toBe(0);
  });

  it("signs out", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${session.app.url}/login`);
    expect(await page.evaluate(() => fetch("/api/me").then((r) => r.status))).toBe(401);
  });

  it("deletes everything only after the phrase is typed", async () => {
    await signInAsDeveloper(page, session.app.url);
    await page.goto(`${session.app.url}/app/settings`);
    const remove = page.getByRole("button", { name: "Delete all my data" });
    await remove.waitFor();
    expect(await remove.isDisabled()).toBe(true);
    const phrase = page.getByRole("textbox", { name: "Type “delete everything” to confirm" });
    await phrase.fill("delete");
    expect(await remove.isDisabled()).toBe(true);
    await phrase.fill("delete everything");
    expect(await remove.isDisabled()).toBe(false);
    await screenshots(page, "settings-delete-confirm");
    await remove.click();
    await page.waitForURL(`${session.app.url}/login`, { timeout: 20_000 });
    const left = await asOwner(
      session,
      (sql) =>
        sql`select (select count(*) from entities where user_id = ${userId})::int as entities, (select count(*) from auth.users where id = ${userId})::int as users`,
    );
    expect(left[0]).toEqual({ entities: 0, users: 0 });
  });
});
