// Guards issue 26's offline model with a newcomer, beyond the table that tests/node/newcomer-start.test.ts
// runs row by row against npm start: reminders land at the instant the person's own clock names (a
// Telegram person in New York, through the real webhook, schedule_create and schedule_list); every time
// expression docs/offline-model.md lists is read as it says, across zones and a change of the clocks;
// and every form of a fact and of a question about the person it lists is understood.
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { offlineFacts } from "../../agents/integrations/model/offline-facts";
import { answerAboutPerson, personQuestion, toYou } from "../../agents/integrations/model/offline-person";
import { parseReminder } from "../../agents/integrations/model/offline-time";
import { isoLocal, localToInstant } from "../../platform/local-time";
import { newChatId, testDatabase } from "./helpers";
import { converse, personOfChat } from "./telegram-updates";

describe("the offline model's reminders", () => {
  it("sets one on the person's clock and lists it in their time", async () => {
    const chatId = newChatId();
    const [, zoneSet, set, listed] = await converse(chatId, [
      "/start",
      "/timezone New York",
      "remind me to call Ana tomorrow at 9",
      "what are my reminders?",
    ]);
    expect(zoneSet).toMatch(/America\/New_York/);
    expect(set).toMatch(/^Reminder set: call Ana, tomorrow at 09:00 \(\w+day \d+ \w+, America\/New_York\)\./);
    const userId = await personOfChat(chatId);
    const rows = (await testDatabase().withUser(userId, (tx) =>
      tx.execute(sql`select occurred_at, payload->>'text' as text from events where kind = 'reminder'`),
    )) as unknown as Array<{ occurred_at: string | Date; text: string }>;
    const tomorrow = isoLocal(new Date(Date.now() + 86_400_000), "America/New_York").slice(0, 10);
    expect(rows.map((r) => [new Date(r.occurred_at).toISOString(), r.text])).toEqual([
      [localToInstant(`${tomorrow}T09:00`, "America/New_York").toISOString(), "call Ana"],
    ]);
    expect(listed).toMatch(/^Your reminders \(America\/New_York time\): call Ana — \w{3} \d+ \w{3}, 09:00\.$/);
  });

  it("reads every time expression its docs list", () => {
    // Thursday 26 November 2026, 18:40 in Lisbon (UTC+0 in winter), 19:40 in Berlin.
    const now = new Date("2026-11-26T18:40:00Z");
    const when = (text: string, zone = "Europe/Lisbon") => {
      const asked = parseReminder(text, now, zone);
      return asked?.when ? [asked.what, asked.when.at, asked.when.words] : [asked?.what ?? null, null, null];
    };
    expect(when("remind me to call Ana tomorrow at 9")).toEqual(["call Ana", "2026-11-27T09:00", "tomorrow at 09:00"]);
    expect(when("Remind me tomorrow at 9am to call Ana.")).toEqual(["call Ana", "2026-11-27T09:00", "tomorrow at 09:00"]);
    expect(when("remind me in 20 minutes to stretch")).toEqual(["stretch", "2026-11-26T19:00:00.000Z", "in 20 minutes"]);
    expect(when("remind me to eat in an hour")).toEqual(["eat", "2026-11-26T19:40:00.000Z", "in 1 hour"]);
    expect(when("remind me in 2 days to call the bank")).toEqual(["call the bank", "2026-11-28T18:40:00.000Z", "in 2 days"]);
    // A weekday is the coming one, never today: said on a Thursday, "on Thursday" is next week's.
    expect(when("remind me to water the plants on Friday")).toEqual(["water the plants", "2026-11-27T09:00", "on Friday at 09:00"]);
    expect(when("remind me on Thursday to water the plants")).toEqual(["water the plants", "2026-12-03T09:00", "on Thursday at 09:00"]);
    expect(when("remind me next Monday morning to send the report")).toEqual([
      "send the report",
      "2026-11-30T09:00",
      "next Monday at 09:00",
    ]);
    expect(when("remind me on Saturday afternoon to buy bread")).toEqual(["buy bread", "2026-11-28T15:00", "on Saturday at 15:00"]);
    // A time alone is the next time the clock shows it: 18:30 has passed in Lisbon, not in Berlin.
    expect(when("remind me at 18:30 to check the oven")).toEqual(["check the oven", "2026-11-27T18:30", "at 18:30"]);
    expect(when("remind me at 18:30 to check the oven", "America/New_York")).toEqual(["check the oven", "2026-11-26T18:30", "at 18:30"]);
    expect(when("remind me at 6pm to cook", "Asia/Tokyo")).toEqual(["cook", "2026-11-27T18:00", "at 18:00"]);
    expect(when("remind me at noon to eat")).toEqual(["eat", "2026-11-27T12:00", "at 12:00"]);
    expect(when("remind me at 3 to nap")).toEqual(["nap", "2026-11-27T15:00", "at 15:00"]);
    expect(when("remind me tonight to call mum")).toEqual(["call mum", "2026-11-26T20:00", "tonight at 20:00"]);
    expect(when("remind me this evening to call mum")).toEqual(["call mum", "2026-11-26T19:00", "at 19:00"]);
    expect(when("remind me to pay the rent")).toEqual(["pay the rent", null, null]);
    expect(when("remind me tomorrow at 9")).toEqual(["", "2026-11-27T09:00", "tomorrow at 09:00"]);
    expect(parseReminder("can you remind me to stretch in 5 minutes", now, "UTC")?.what).toBe("stretch");
    expect(parseReminder("I reminded Ana about the party", now, "UTC")).toBeNull();
    // Across the spring change in Berlin (29 March 2026, 02:00 → 03:00): 09:00 the next day is 07:00 UTC.
    const beforeChange = new Date("2026-03-28T20:00:00Z");
    const spring = parseReminder("remind me tomorrow at 9 to run", beforeChange, "Europe/Berlin")?.when;
    expect(spring?.at).toBe("2026-03-29T09:00");
    expect(spring?.instant.toISOString()).toBe("2026-03-29T07:00:00.000Z");
  });
});

describe("the offline model on the person", () => {
  it("understands every form of a fact its docs list, and says it back in the second person", () => {
    const forms: Array<[string, string, string]> = [
      ["I'm vegetarian", "Is vegetarian", "diet"],
      ["I am vegan", "Is vegan", "diet"],
      ["I'm not vegetarian any more", "Is not vegetarian", "diet"],
      ["I live in Lisbon", "Lives in Lisbon", "home city"],
      ["I moved to Porto", "Lives in Porto", "home city"],
      ["I've lived in Porto since 2019", "Lives in Porto", "home city"],
      ["I work at Acme", "Works at Acme", "employer"],
      ["I work as a nurse", "Works as a nurse", "job"],
      ["my sister's name is Ana", "Sister is Ana", "sister: ana"],
      ["my sister's name is ana", "Sister is Ana", "sister: ana"],
      ["My sister is Ana", "Sister is Ana", "sister: ana"],
      ["Ana is my sister", "Sister is Ana", "sister: ana"],
      ["my partner is Sam", "Partner is Sam", "partner"],
      ["my best friend is João", "Best friend is João", "best friend"],
      ["my name is joão", "Name is João", "name"],
      ["my birthday is on 3 May", "Birthday is 3 May", "birthday"],
      ["I was born on 3 May 1990", "Birthday is 3 May 1990", "birthday"],
      ["I'm from Brazil", "Is from Brazil", "origin"],
      ["I speak Portuguese and English", "Speaks Portuguese and English", "languages"],
      ["I love jazz", "Likes jazz", "likes: jazz"],
      ["I hate olives", "Dislikes olives", "likes: olives"],
      ["my favourite colour is green", "Favorite colour is green", "favorite colour"],
      ["I'm allergic to peanuts", "Is allergic to peanuts", "allergy: peanuts"],
      ["I'm learning Japanese", "Is learning Japanese", "learning: japanese"],
    ];
    for (const [said, statement, subject] of forms) {
      expect(
        offlineFacts(said).map((f) => [f.statement, f.subject]),
        said,
      ).toEqual([[statement, subject]]);
    }
    // Not facts: a question, a passing remark, a like of something the rules cannot name.
    for (const said of ["where do I live?", "my dog is sick", "I read Dune and I love it", "I met Ana"])
      expect(offlineFacts(said), said).toEqual([]);
    expect(["Lives in Porto", "Sister is Ana", "Is not vegetarian", "Favorite colour is green", "Has two cats"].map(toYou)).toEqual([
      "you live in Porto",
      "your sister is Ana",
      "you're not vegetarian",
      "your favorite colour is green",
      "Has two cats",
    ]);
  });

  it("answers every question about the person its docs list from the facts it is given", () => {
    const known = [
      "Lives in Porto",
      "Works at Acme",
      "Is vegetarian",
      "Birthday is 3 May",
      "Speaks Portuguese and English",
      "Name is João",
      "Is from Brazil",
      "Likes jazz",
      "Favorite colour is green",
      "Sister is Ana",
    ];
    const answers: Array<[string, string]> = [
      ["what do you know about me?", "Here's what I know about you: you live in Porto, you work at Acme, you're vegetarian, "],
      ["where do I live?", "You live in Porto."],
      ["where do I work?", "You work at Acme."],
      ["what do I eat?", "You're vegetarian."],
      ["when is my birthday?", "Your birthday is 3 May."],
      ["what languages do I speak?", "You speak Portuguese and English."],
      ["what's my name?", "Your name is João."],
      ["where am I from?", "You're from Brazil."],
      ["what do I like?", "You like jazz."],
      ["what's my favourite colour?", "Your favorite colour is green."],
      ["who is my sister?", "Your sister is Ana."],
      ["what's my sister's name?", "Your sister is Ana."],
      ["who is my brother?", "You haven't told me your brother's name yet."],
    ];
    for (const [asked, answer] of answers) {
      const question = personQuestion(asked);
      expect(question, asked).not.toBeNull();
      expect(answerAboutPerson(question!, known).slice(0, answer.length), asked).toBe(answer);
    }
    expect(answerAboutPerson(personQuestion("what do you know about me?")!, [])).toMatch(/^I don't know anything about you yet/);
    for (const asked of ["who is Ana?", "which books did I read?", "where is Lisbon?"]) expect(personQuestion(asked), asked).toBeNull();
  });
});
