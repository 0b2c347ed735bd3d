// Guards the Reminders page as a person uses it, in Debian's Chromium against `npm start`: upcoming and
// past reminders with their status, in the person's timezone (not the browser's); cancelling after a
// confirmation; a reminder already being sent refused with the server's words; loading, empty and error
// states; reminders that reached no channel at the top of the chat ('while you were away') — found by visible text and accessible names, photographed at 375 and 1280 px.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asOwner, checkLoadStates, fitsWidth, PHONE, screenshots, signedInPage, startSession, type Session } from "./harness";

let session: Session;
beforeAll(async () => {
  session = await startSession();
}, 120_000);
afterAll(() => session?.stop());

/** Reminders as schedule_create and the delivery workflow leave them: two to come, four past. */
async function seedReminders(userId: string): Promise<void> {
  await asOwner(session, async (sql) => {
    const rows: Array<[string, string, string]> = [
      ["call mum", "2030-01-15T15:00:00Z", "scheduled"],
      ["water the plants", "2030-02-01T08:30:00Z", "scheduled"],
      ["renew passport", "2026-03-02T09:00:00Z", "delivered"],
      ["dentist", "2026-04-10T07:00:00Z", "undeliverable"],
      ["book tickets", "2026-05-20T18:00:00Z", "cancelled"],
      ["take out the bins", "2026-06-01T06:00:00Z", "delivering"],
    ];
    for (const [text, at, status] of rows) {
      await sql`insert into events (user_id, kind, occurred_at, payload, status) values (${userId}, 'reminder', ${at}::timestamptz, ${sql.json({ text })}, ${status})`;
    }
  });
}

const texts = (page: Page, list: "Upcoming" | "Past") => page.getByRole("list", { name: list }).locator(".reminder-text").allInnerTexts();

describe("the Reminders page", () => {
  let page: Page;
  let problems: string[];
  let userId: string;

  beforeAll(async () => {
    // The error and too-late states below are real 500/409 answers, which Chromium logs.
    ({ page, problems, userId } = await signedInPage(session, { allow: /status of (409|500)/ }));
  });
  afterAll(() => expect(problems).toEqual([]));

  it("says there is nothing coming up and nothing past before any reminder", async () => {
    await page.getByRole("link", { name: "Reminders" }).click();
    await expect.poll(() => page.getByText("Nothing coming up.", { exact: false }).count(), { timeout: 10_000 }).toBe(1);
    expect(await page.getByText("No past reminders yet.").count()).toBe(1);
    await screenshots(page, "reminders-empty");
    await seedReminders(userId);
    // The person lives in New York; the browser says Berlin. The page follows the person.
    await page.evaluate(() =>
      fetch("/api/me/timezone", {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ timezone: "America/New_York" }),
      }),
    );
    await page.reload();
  });

  it("lists upcoming soonest first and past with their status, in the person's timezone, and fits a phone", async () => {
    await expect.poll(() => texts(page, "Upcoming"), { timeout: 10_000 }).toEqual(["call mum", "water the plants"]);
    expect(await page.getByText("Times are in America/New_York").count()).toBe(1);
    expect(await page.getByTestId("reminder").filter({ hasText: "call mum" }).innerText()).toContain("Tuesday, 15 January 2030 at 10:00");
    expect(await texts(page, "Past")).toEqual(["take out the bins", "book tickets", "dentist", "renew passport"]);
    const status = (text: string) =>
      page.getByRole("list", { name: "Past" }).getByTestId("reminder").filter({ hasText: text }).locator(".badge").innerText();
    expect([
      await status("take out the bins"),
      await status("book tickets"),
      await status("dentist"),
      await status("renew passport"),
    ]).toEqual(["being sent", "cancelled", "missed: no Telegram and no notifications on", "sent"]);
    expect(await page.getByRole("list", { name: "Past" }).getByRole("button").count()).toBe(0);
    await page.setViewportSize(PHONE);
    await expect.poll(() => fitsWidth(page)).toBe(true);
    await screenshots(page, "reminders-list");
  });

  it("cancels an upcoming reminder after a confirmation, and it moves to the past", async () => {
    await page.getByRole("button", { name: "Cancel reminder “call mum”" }).click();
    const confirm = page.getByRole("group", { name: "Cancel “call mum”?" });
    expect(await confirm.innerText()).toContain("It will not be sent. This cannot be undone.");
    await screenshots(page, "reminders-cancel-confirm");
    await confirm.getByRole("button", { name: "Keep it" }).click();
    expect(await texts(page, "Upcoming")).toEqual(["call mum", "water the plants"]);

    await page.getByRole("button", { name: "Cancel reminder “call mum”" }).focus();
    await page.keyboard.press("Enter");
    await page.getByRole("button", { name: "Cancel reminder", exact: true }).click();
    await expect
      .poll(() => page.getByRole("status").innerText(), { timeout: 10_000 })
      .toContain("Cancelled “call mum”. It will not be sent.");
    expect(await texts(page, "Upcoming")).toEqual(["water the plants"]);
    expect((await texts(page, "Past"))[0]).toBe("call mum");
    await screenshots(page, "reminders-cancelled");
    await page.reload();
    await expect.poll(() => texts(page, "Upcoming"), { timeout: 10_000 }).toEqual(["water the plants"]);
    expect(await texts(page, "Past")).toContain("call mum");
  });

  it("says so when the reminder is already being sent", async () => {
    await page.getByRole("button", { name: "Cancel reminder “water the plants”" }).click();
    // The delivery workflow picks it up meanwhile.
    await asOwner(
      session,
      (sql) => sql`update events set status = 'delivering' where user_id = ${userId} and payload ->> 'text' = 'water the plants'`,
    );
    await page.getByRole("button", { name: "Cancel reminder", exact: true }).click();
    await expect
      .poll(() => page.getByRole("alert").innerText(), { timeout: 10_000 })
      .toBe("Could not cancel it: This reminder is being sent right now.");
    await screenshots(page, "reminders-too-late");
  });

  it("shows a repeating reminder set in the chat with its rule and next times; pauses, resumes, edits and deletes it", async () => {
    await page.getByRole("link", { name: "Chat" }).click();
    await page.getByRole("textbox", { name: "Message", exact: true }).fill("remind me every Monday at 9 to water the ferns");
    await page.keyboard.press("Enter");
    await expect
      .poll(() => page.getByRole("log", { name: "Conversation" }).innerText(), { timeout: 20_000 })
      .toContain("Repeating reminder set: water the ferns, every week on Monday at 09:00");
    await page.getByRole("link", { name: "Reminders" }).click();
    const item = page.getByTestId("schedule").filter({ hasText: "water the ferns" });
    await expect.poll(() => item.count(), { timeout: 10_000 }).toBe(1);
    expect(await item.innerText()).toContain("every week on Monday at 09:00");
    const next = await item.locator("time").allInnerTexts();
    expect(next).toHaveLength(3);
    for (const when of next) expect(when).toMatch(/^Monday, .* at 09:00$/);
    await screenshots(page, "reminders-repeating");
    await page.setViewportSize(PHONE);
    expect(await fitsWidth(page)).toBe(true);

    await item.getByRole("button", { name: "Pause “water the ferns”" }).click();
    await expect.poll(() => item.innerText()).toContain("paused");
    expect(await item.locator("time").count()).toBe(0);
    await item.getByRole("button", { name: "Resume “water the ferns”" }).click();
    await expect.poll(() => item.locator("time").count()).toBe(3);

    // Edited: new words and a new time of day, and the next times follow.
    await item.getByRole("button", { name: "Edit “water the ferns”" }).click();
    const form = page.getByRole("form", { name: "Edit “water the ferns”" });
    await form.getByLabel("What").fill("water the ferns and the basil");
    await form.getByLabel("Time").fill("10:30");
    await form.getByRole("button", { name: "Save" }).click();
    const edited = page.getByTestId("schedule").filter({ hasText: "water the ferns and the basil" });
    await expect.poll(() => edited.innerText(), { timeout: 10_000 }).toContain("every week on Monday at 10:30");
    for (const when of await edited.locator("time").allInnerTexts()) expect(when).toMatch(/^Monday, .* at 10:30$/);
    await screenshots(page, "reminders-repeating-edited");
    await edited.getByRole("button", { name: "Delete “water the ferns and the basil”" }).click();
    await page.getByRole("button", { name: "Delete repeating reminder" }).click();
    await expect.poll(() => page.getByTestId("schedule").count()).toBe(0);
    expect(await page.getByText("Nothing repeats yet.", { exact: false }).count()).toBe(1);
  });

  it("shows loading and error states, and recovers", async () => {
    await checkLoadStates(page, {
      api: "**/api/reminders",
      open: () => page.reload(),
      what: "reminders",
      shot: "reminders",
      ready: async () => (await texts(page, "Past")).includes("water the plants"),
    });
  });

  it("shows reminders that reached no channel at the top of the chat, 'while you were away', until dismissed", async () => {
    const hoursAgo = (h: number) => new Date(Date.now() - h * 3600_000).toISOString();
    await asOwner(session, async (sql) => {
      for (const [text, at] of [
        ["pick up the parcel", hoursAgo(2)],
        ["call the bank", hoursAgo(30)],
        ["old news", hoursAgo(24 * 9)],
      ] as const) {
        await sql`insert into events (user_id, kind, occurred_at, payload, status) values (${userId}, 'reminder', ${at}::timestamptz, ${sql.json({ text })}, 'undeliverable')`;
      }
    });
    await page.getByRole("link", { name: "Chat" }).click();
    const away = page.getByRole("region", { name: "While you were away" });
    await expect.poll(() => away.count(), { timeout: 10_000 }).toBe(1);
    // The last week's, oldest first; the dentist (months ago) and a nine-day-old one are on the Reminders page only.
    expect(await away.getByRole("list", { name: "Missed reminders" }).locator(".reminder-text").allInnerTexts()).toEqual([
      "call the bank",
      "pick up the parcel",
    ]);
    expect(await away.getByRole("link", { name: "Turn on notifications or link Telegram" }).getAttribute("href")).toBe("/app/settings");
    await page.setViewportSize(PHONE);
    expect(await fitsWidth(page)).toBe(true);
    await screenshots(page, "chat-while-away");
    await away.getByRole("button", { name: "Dismiss" }).focus();
    await page.keyboard.press("Enter");
    await expect.poll(() => away.count()).toBe(0);
    await page.reload();
    await expect.poll(() => page.getByRole("log", { name: "Conversation" }).count(), { timeout: 10_000 }).toBe(1);
    await page.getByRole("link", { name: "Reminders" }).click();
    await expect.poll(() => texts(page, "Past"), { timeout: 10_000 }).toContain("pick up the parcel");
    await page.getByRole("link", { name: "Chat" }).click();
    await expect.poll(() => page.getByRole("log", { name: "Conversation" }).count(), { timeout: 10_000 }).toBe(1);
    expect(await away.count()).toBe(0);
  });
});
