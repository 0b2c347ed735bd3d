// Guards issue 26's "the empty chat says something": the messages Soma offers a newcomer (FIRST_MESSAGES)
// are listed in the Telegram welcome and served to the web chat by GET /api/me, and each one, said in
// that order, is understood by the model the tests and `npm start` run — the offline one — through the
// same tools a real model uses: none gets the "I only understand…" fallback, and each builds on the last.
import { describe, expect, it } from "vitest";
import { FIRST_MESSAGES, WELCOME } from "../../agents/commands/index";
import { call, newChatId, newPerson, sessionCookie } from "./helpers";
import { converse } from "./telegram-updates";

describe("the first messages Soma offers", () => {
  it("are in the welcome and in GET /api/me", async () => {
    for (const message of FIRST_MESSAGES) expect(WELCOME).toContain(`• ${message}`);
    const person = await newPerson("examples");
    const me = (await (await call("/api/me", { headers: { cookie: await sessionCookie(person) } })).json()) as { examples: string[] };
    expect(me.examples).toEqual(FIRST_MESSAGES);
  });

  it("each work with the offline model, in order, through the memory tools", async () => {
    const chatId = newChatId();
    const [welcome, ...replies] = await converse(chatId, ["/start", ...FIRST_MESSAGES]);
    expect(welcome).toBe(WELCOME);
    for (const reply of replies) expect(reply).not.toMatch(/didn.t understand that/);
    const [saved, books, noted, about] = replies;
    expect(saved).toMatch(/Dune \(book\)/);
    expect(books).toMatch(/Dune/);
    expect(noted).toMatch(/my sister's birthday is on 12 May/);
    expect(about).toMatch(/Dune/);
  });
});
