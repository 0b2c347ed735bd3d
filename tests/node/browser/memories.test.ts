// Guards the Memories pages as a person uses them, in Debian's Chromium against `npm start`: a long
// list a page at a time, newest first; search, type and time filters; one memory's provenance,
// relations and events; editing (and the collision refusal); forgetting with undo; loading, empty and
// error states — each found by visible text and accessible names, photographed at 375 and 1280 px.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asOwner, checkLoadStates, fitsWidth, PHONE, screenshots, signedInPage, startSession, type Session } from "./harness";

let session: Session;
beforeAll(async () => {
  session = await startSession();
}, 120_000);
afterAll(() => session?.stop());

/** Writes the developer's memories straight into the database (as its owner): 130 notes and a few with history. */
async function seedMemories(userId: string): Promise<void> {
  await asOwner(session, async (sql) => {
    await sql`insert into entities (user_id, type, name, normalized_name, created_at, told_at)
      select ${userId}, 'note', 'Note ' || n, 'note ' || n, now() - interval '2 days' - n * interval '1 minute', now() - interval '2 days' - n * interval '1 minute' from generate_series(1, 130) n`;
    const [source] = await sql`insert into sources (user_id, kind, external_id, payload, created_at)
      values (${userId}, 'telegram', '42:7', ${sql.json({ text: "I just finished Dune" })}, now() - interval '1 hour') returning id`;
    const [dune] =
      await sql`insert into entities (user_id, type, name, normalized_name, properties, source_id, created_at, told_at, happened_at)
      values (${userId}, 'book', 'Dune', 'dune', ${sql.json({ author: "Frank Herbert" })}, ${source!.id}, now() - interval '1 hour', now() - interval '1 hour', timestamptz '2024-02-03T10:00:00Z') returning id`;
    const [herbert] = await sql`insert into entities (user_id, type, name, normalized_name, created_at, told_at)
      values (${userId}, 'person', 'Frank Herbert', 'frank herbert', now() - interval '50 minutes', now() - interval '50 minutes') returning id`;
    await sql`insert into entities (user_id, type, name, normalized_name, created_at, told_at) values (${userId}, 'book', 'Emma', 'emma', now() - interval '3 hours', now() - interval '3 hours')`;
    await sql`insert into entities (user_id, type, name, normalized_name, created_at, told_at) values (${userId}, 'place', 'Old Map Shop', 'old map shop', timestamptz '2023-06-15T12:00:00Z', timestamptz '2023-06-15T12:00:00Z')`;
    await sql`insert into edges (user_id, from_id, to_id, type) values (${userId}, ${dune!.id}, ${herbert!.id}, 'written_by')`;
    await sql`insert into events (user_id, kind, occurred_at, payload, status, entity_ids)
      values (${userId}, 'reminder', now() + interval '2 days', ${sql.json({ text: "lend Dune to Sam" })}, 'scheduled', array[${dune!.id}]::uuid[])`;
  });
}

const names = (page: Page) => page.getByTestId("memory").locator(".memory-name").allInnerTexts();

describe("the Memories pages", () => {
  let page: Page;
  let problems: string[];
  let userId: string;

  beforeAll(async () => {
    // The error, not-found and collision states below are real 500/404/409 answers, which Chromium logs.
    ({ page, problems, userId } = await signedInPage(session, { allow: /status of (404|409|500)/ }));
  });
  afterAll(() => expect(problems).toEqual([]));

  it("says there is nothing yet before anything is remembered", async () => {
    await page.getByRole("link", { name: "Memories" }).click();
    await expect.poll(() => page.getByText("Nothing here yet.", { exact: false }).count(), { timeout: 10_000 }).toBe(1);
    await screenshots(page, "memories-empty");
    await seedMemories(userId);
    await page.reload();
  });

  it("lists memories newest first, a page at a time, and fits a phone", async () => {
    await expect.poll(() => page.getByTestId("memory").count(), { timeout: 10_000 }).toBe(50);
    expect((await names(page)).slice(0, 5)).toEqual(["Frank Herbert", "Dune", "Emma", "Note 1", "Note 2"]);
    expect(await page.getByTestId("memory").nth(1).innerText()).toContain("Telegram · “I just finished Dune”");
    await page.getByRole("button", { name: "Show more" }).click();
    await expect.poll(() => page.getByTestId("memory").count()).toBe(100);
    await page.getByRole("button", { name: "Show more" }).click();
    await expect.poll(() => page.getByTestId("memory").count()).toBe(134);
    expect(await page.getByRole("button", { name: "Show more" }).count()).toBe(0);
    expect((await names(page)).at(-1)).toBe("Old Map Shop");
    await page.setViewportSize(PHONE);
    expect(await fitsWidth(page)).toBe(true);
    await page.evaluate("window.scrollTo(0, 0)");
    await screenshots(page, "memories-list");
  });

  it("searches, filters by type and by when it was learned, and says when nothing matches", async () => {
    await page.getByRole("searchbox", { name: "Search memories" }).fill("dune");
    await expect.poll(() => names(page), { timeout: 10_000 }).toEqual(["Dune"]);
    await page.getByRole("searchbox", { name: "Search memories" }).fill("");
    await page.getByRole("combobox", { name: "Type" }).selectOption("book");
    await expect.poll(() => names(page), { timeout: 10_000 }).toEqual(["Dune", "Emma"]);
    await page.getByRole("combobox", { name: "Type" }).selectOption("");
    await page.getByRole("combobox", { name: "When" }).selectOption("custom");
    await page.getByLabel("From").fill("2023-06-01");
    await page.getByLabel("Until").fill("2023-06-30");
    await expect.poll(() => names(page), { timeout: 10_000 }).toEqual(["Old Map Shop"]);
    await page.getByRole("combobox", { name: "When" }).selectOption("7d");
    await expect.poll(() => page.getByTestId("memory").count(), { timeout: 10_000 }).toBe(50);
    expect(await names(page)).not.toContain("Old Map Shop");
    await page.getByRole("searchbox", { name: "Search memories" }).fill("zzzqqq");
    await expect.poll(() => page.getByText("No memories match these filters.").count(), { timeout: 10_000 }).toBe(1);
    await screenshots(page, "memories-no-match");
    await page.goto(`${session.app.url}/app/memories`);
  });

  it("shows where a memory was learned, its relations and events, and walks to a related memory", async () => {
    await page.getByRole("link", { name: "Dune", exact: true }).click();
    await expect.poll(() => page.getByRole("heading", { level: 1 }).innerText(), { timeout: 10_000 }).toBe("Dune");
    const text = await page.locator(".memory-detail").innerText();
    expect(text).toMatch(/author\s+Frank Herbert/);
    expect(text).toMatch(/From Telegram on \w+day, \d+ \w+ \d{4} at \d\d:\d\d/);
    expect(text).toContain("I just finished Dune");
    expect(text).toMatch(/Told \w+day, \d+ \w+ \d{4} at \d\d:\d\d · happened Saturday, 3 February 2024 at 11:00/);
    expect(text).toMatch(/written by →\s+Frank Herbert/);
    expect(text).toMatch(/reminder · .* · scheduled · lend Dune to Sam/);
    await screenshots(page, "memory-detail");
    await page.getByRole("list", { name: "Related memories" }).getByRole("link", { name: "Frank Herbert" }).click();
    await expect.poll(() => page.getByRole("heading", { level: 1 }).innerText(), { timeout: 10_000 }).toBe("Frank Herbert");
    expect(await page.locator(".memory-detail").innerText()).toMatch(/← written by\s+Dune/);
    await page.goBack();
    await expect.poll(() => page.getByRole("heading", { level: 1 }).innerText(), { timeout: 10_000 }).toBe("Dune");
  });

  it("edits name, type and details, and refuses a name another memory has", async () => {
    await page.getByRole("button", { name: "Edit" }).click();
    const form = page.getByRole("form", { name: "Edit Dune" });
    await form.getByRole("textbox", { name: "Name", exact: true }).fill("Dune Messiah");
    await form.getByRole("textbox", { name: /^Details/ }).fill("author: Frank Herbert\nrating: 5");
    await screenshots(page, "memory-edit");
    await form.getByRole("button", { name: "Save" }).click();
    await expect.poll(() => page.getByRole("heading", { level: 1 }).innerText(), { timeout: 10_000 }).toBe("Dune Messiah");
    expect(await page.locator(".properties").innerText()).toMatch(/rating\s+5/);

    await page.getByRole("button", { name: "Edit" }).click();
    await page.getByRole("textbox", { name: "Name", exact: true }).fill("emma");
    await page.getByRole("button", { name: "Save" }).click();
    await expect
      .poll(() => page.getByRole("alert").innerText(), { timeout: 10_000 })
      .toBe("Another memory is already called “Emma” (book).");
    await screenshots(page, "memory-edit-conflict");
    await page.getByRole("button", { name: "Cancel" }).click();
    expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe("Dune Messiah");
  });

  it("forgets with undo, on a memory's page and in the list", async () => {
    await page.getByRole("button", { name: "Forget", exact: true }).click();
    await expect.poll(() => page.getByRole("status").innerText(), { timeout: 10_000 }).toContain("Forgot Dune Messiah.");
    expect(await page.getByText("forgotten", { exact: true }).count()).toBe(1);
    await screenshots(page, "memory-forgotten");
    await page.getByRole("button", { name: "Undo" }).click();
    await expect.poll(() => page.getByText("forgotten", { exact: true }).count(), { timeout: 10_000 }).toBe(0);

    await page.getByRole("link", { name: "← All memories" }).click();
    await page.getByRole("button", { name: "Forget Emma" }).click();
    await expect.poll(() => names(page), { timeout: 10_000 }).not.toContain("Emma");
    await page.getByRole("button", { name: "Undo" }).click();
    await expect.poll(() => names(page), { timeout: 10_000 }).toContain("Emma");
    await page.reload();
    await expect.poll(async () => (await names(page)).slice(0, 3), { timeout: 10_000 }).toEqual(["Frank Herbert", "Dune Messiah", "Emma"]);
  });

  it("shows loading, error and not-found states", async () => {
    await checkLoadStates(page, {
      api: "**/api/memories?*",
      open: () => page.goto(`${session.app.url}/app/memories?type=book`),
      what: "memories",
      shot: "memories",
      ready: async () => JSON.stringify(await names(page)) === JSON.stringify(["Dune Messiah", "Emma"]),
    });

    await page.goto(`${session.app.url}/app/memories?memory=${crypto.randomUUID()}`);
    await expect
      .poll(() => page.getByRole("alert").innerText(), { timeout: 10_000 })
      .toContain("This memory could not be shown: No such memory.");
    await screenshots(page, "memory-not-found");
  });
});
