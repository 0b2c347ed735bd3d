// Guards the Facts page as a person uses it, in Debian's Chromium against `npm start`: what Soma believes,
// by category, with confidence and source; a correction by keyboard that keeps the old fact as history
// (collapsed per fact); a correction that lost a race (409) shown as said; deleting after a confirmation;
// loading, empty and error states — found by visible text and accessible names, photographed at 375 and 1280 px.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asOwner, checkLoadStates, fitsWidth, PHONE, screenshots, signedInPage, startSession, type Session } from "./harness";

let session: Session;
beforeAll(async () => {
  session = await startSession();
}, 120_000);
afterAll(() => session?.stop());

/** The developer's facts, written as the fact extractor leaves them: Hamburg → Berlin → Munich, and three more. */
async function seedFacts(userId: string): Promise<void> {
  await asOwner(session, async (sql) => {
    const [source] = await sql`insert into sources (user_id, kind, external_id, payload, created_at)
      values (${userId}, 'telegram', '42:9', ${sql.json({ text: "I moved to Munich last month" })}, now() - interval '2 hours') returning id`;
    const [munich] = await sql`insert into facts (user_id, statement, category, subject, confidence, source_id, told_at)
      values (${userId}, 'Lives in Munich', 'location', 'home city', 0.9, ${source!.id}, now() - interval '2 hours') returning id`;
    const [berlin] = await sql`insert into facts (user_id, statement, category, subject, confidence, superseded_by, told_at, updated_at)
      values (${userId}, 'Lives in Berlin', 'location', 'home city', 0.8, ${munich!.id}, now() - interval '90 days', now() - interval '2 hours') returning id`;
    await sql`insert into facts (user_id, statement, category, subject, confidence, superseded_by, told_at, updated_at)
      values (${userId}, 'Lives in Hamburg', 'location', 'home city', 0.7, ${berlin!.id}, now() - interval '400 days', now() - interval '90 days')`;
    await sql`insert into facts (user_id, statement, category, subject, confidence, told_at, happened_at)
      values (${userId}, 'Works as a nurse', 'work', 'job', 0.7, now() - interval '10 days', '2019-03-01T12:00:00Z'),
             (${userId}, 'Likes green tea', 'preference', 'tea', 0.4, now() - interval '5 days', null)`;
  });
}

const statements = (page: Page) => page.getByTestId("fact").locator(".fact-statement").allInnerTexts();
const facts = (page: Page) =>
  page.evaluate(() => fetch("/api/facts").then((r) => r.json())) as Promise<{
    current: Array<{ statement: string }>;
    superseded: Array<{ statement: string }>;
  }>;

describe("the Facts page", () => {
  let page: Page;
  let problems: string[];
  let userId: string;

  beforeAll(async () => {
    // The error and collision states below are real 500/409 answers, which Chromium logs.
    ({ page, problems, userId } = await signedInPage(session, { allow: /status of (409|500)/ }));
  });
  afterAll(() => expect(problems).toEqual([]));

  it("says Soma knows nothing yet before any fact is learned", async () => {
    await page.getByRole("link", { name: "Facts" }).click();
    await expect
      .poll(() => page.getByText("Soma does not know anything about you yet.", { exact: false }).count(), { timeout: 10_000 })
      .toBe(1);
    expect(await page.getByRole("link", { name: "Facts" }).getAttribute("aria-current")).toBe("page");
    await screenshots(page, "facts-empty");
    await seedFacts(userId);
    await page.reload();
  });

  it("groups current facts by category, with confidence and the message each came from, and fits a phone", async () => {
    await expect.poll(() => statements(page), { timeout: 10_000 }).toEqual(["Lives in Munich", "Works as a nurse", "Likes green tea"]);
    expect(await page.getByRole("heading", { level: 2 }).allInnerTexts()).toEqual(["Location", "Work", "Preference"]);
    const munich = page.getByTestId("fact").filter({ hasText: "Lives in Munich" });
    expect(await munich.innerText()).toMatch(/90% sure\s+From Telegram · [^·]*\d\d:\d\d · “I moved to Munich last month”/);
    expect(await page.getByTestId("fact").filter({ hasText: "Likes green tea" }).innerText()).toContain("40% sure");
    // Since when it holds, where the person said so.
    expect(await page.getByTestId("fact").filter({ hasText: "Works as a nurse" }).innerText()).toMatch(
      /Works as a nurse\s+since 1 March 2019\s+70% sure/,
    );
    expect(await munich.innerText()).not.toContain("since");
    // The history is there, collapsed under the fact that replaced it.
    const earlier = munich.getByText("Earlier (2)");
    expect(await munich.getByText("Lives in Berlin").isVisible()).toBe(false);
    await page.setViewportSize(PHONE);
    await expect.poll(() => fitsWidth(page)).toBe(true);
    await screenshots(page, "facts-list");
    await earlier.click();
    expect(await munich.getByRole("list", { name: "Superseded facts" }).innerText()).toMatch(
      /Lives in Berlin · replaced .*\n?.*Lives in Hamburg/s,
    );
    await screenshots(page, "facts-history");
  });

  it("corrects a fact by keyboard: the correction is current, the old fact its history", async () => {
    await page.getByRole("button", { name: "Correct “Likes green tea”" }).focus();
    await page.keyboard.press("Enter");
    const form = page.getByRole("form", { name: "Correct “Likes green tea”" });
    const input = form.getByRole("textbox", { name: "What is true" });
    await expect
      .poll(() =>
        input.evaluate((el) => (el as unknown as { ownerDocument: { activeElement: unknown } }).ownerDocument.activeElement === el),
      )
      .toBe(true);
    await input.fill("Likes black tea");
    await screenshots(page, "facts-correct");
    await input.press("Enter");
    await expect.poll(() => page.getByRole("status").innerText(), { timeout: 10_000 }).toContain("Corrected “Likes green tea”.");
    await expect.poll(() => statements(page)).toContain("Likes black tea");
    const tea = page.getByTestId("fact").filter({ hasText: "Likes black tea" });
    expect(await tea.innerText()).toMatch(/100% sure\s+Corrected by you/);
    await tea.getByText("Earlier (1)").click();
    expect(await tea.getByRole("list", { name: "Superseded facts" }).innerText()).toContain("Likes green tea");
    expect((await facts(page)).superseded.map((f) => f.statement)).toContain("Likes green tea");
  });

  it("shows the refusal when the fact was corrected elsewhere meanwhile", async () => {
    const munich = page.getByTestId("fact").filter({ hasText: "Lives in Munich" });
    await page.getByRole("button", { name: "Correct “Lives in Munich”" }).click();
    // Another tab corrects it first.
    await page.evaluate(async () => {
      const { current } = (await fetch("/api/facts").then((r) => r.json())) as { current: Array<{ id: string; statement: string }> };
      const id = current.find((f) => f.statement === "Lives in Munich")!.id;
      await fetch(`/api/facts/${id}`, {
        method: "PATCH",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ statement: "Lives in Augsburg" }),
      });
    });
    await munich.getByRole("textbox", { name: "What is true" }).fill("Lives in Munich-Schwabing");
    await munich.getByRole("button", { name: "Save correction" }).click();
    await expect.poll(() => munich.getByRole("alert").innerText(), { timeout: 10_000 }).toContain("This fact was already replaced");
    await screenshots(page, "facts-correct-conflict");
    await munich.getByRole("button", { name: "Cancel" }).click();
    await page.reload();
    await expect.poll(() => statements(page), { timeout: 10_000 }).toContain("Lives in Augsburg");
  });

  it("deletes a fact only after a confirmation", async () => {
    await page.getByRole("button", { name: "Delete “Works as a nurse”" }).click();
    const confirm = page.getByRole("group", { name: "Confirm deletion" });
    expect(await confirm.innerText()).toContain("Delete this fact? Soma will no longer know it.");
    await screenshots(page, "facts-delete-confirm");
    await confirm.getByRole("button", { name: "Keep it" }).click();
    expect(await statements(page)).toContain("Works as a nurse");
    await page.getByRole("button", { name: "Delete “Works as a nurse”" }).click();
    await page.getByRole("button", { name: "Delete for good" }).click();
    await expect.poll(() => page.getByRole("status").innerText(), { timeout: 10_000 }).toContain("Deleted “Works as a nurse”.");
    await expect.poll(() => statements(page)).not.toContain("Works as a nurse");
    expect(await page.getByRole("heading", { name: "work" }).count()).toBe(0);
    expect((await facts(page)).current.map((f) => f.statement)).not.toContain("Works as a nurse");
  });

  it("shows loading and error states, and recovers", async () => {
    await checkLoadStates(page, {
      api: "**/api/facts",
      open: () => page.reload(),
      what: "facts",
      shot: "facts",
      ready: async () => (await statements(page)).includes("Lives in Augsburg"),
    });
  });
});
