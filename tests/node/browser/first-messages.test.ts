// Guards issue 26's empty chat in Debian's Chromium against `npm start`: a newcomer's first screen offers
// the first messages (GET /api/me's examples) as buttons, readable at phone width; one is sent from the
// keyboard (a focused offer, Enter), Soma answers it, and the offers give way to the conversation.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FIRST_MESSAGES } from "../../../agents/commands/index";
import { fitsWidth, PHONE, screenshots, signedInPage, startSession, type Session } from "./harness";

let session: Session;
beforeAll(async () => {
  session = await startSession();
}, 120_000);
afterAll(() => session?.stop());

describe("a newcomer's empty chat", () => {
  it("offers the first messages to tap, and one sent from the keyboard is answered", async () => {
    const { page, problems } = await signedInPage(session);
    const offers = page.getByRole("list", { name: "Things to try" }).getByRole("button");
    await expect.poll(() => offers.allInnerTexts()).toEqual(FIRST_MESSAGES);
    await screenshots(page, "chat-first-messages");
    await page.setViewportSize(PHONE);
    expect(await fitsWidth(page)).toBe(true);

    // Each offer is a button: focused, Enter sends it (no pointer needed).
    await page.getByRole("button", { name: FIRST_MESSAGES[0] }).focus();
    await page.keyboard.press("Enter");
    const conversation = page.getByRole("log", { name: "Conversation" });
    await expect.poll(() => conversation.innerText(), { timeout: 20_000 }).toContain("Noted: Dune (book)");
    expect(await conversation.innerText()).toContain(FIRST_MESSAGES[0]);
    expect(await page.getByRole("list", { name: "Things to try" }).count()).toBe(0);
    await screenshots(page, "chat-first-message-answered");
    expect(problems).toEqual([]);
  });
});
