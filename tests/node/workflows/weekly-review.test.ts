// weekly-review with @inngest/test, on the test Postgres and the Bot API stand-in: a summary of the
// week's new memories, once per person and ISO week, nothing Inngest keeps holding its words, and one
// person whose review fails never holding up the others.
//
// Postgres and the stand-ins are shared with test files running in parallel, so the fan-out's "people"
// step is mocked to this test's people (a real run would message other files' people), and the real
// listing is checked on its own with executeStep("people"), which stops after that step.
import { InngestTestEngine } from "@inngest/test";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { isoWeek, REVIEWS_PER_STEP } from "../../../agents/workflows/functions/weekly-review";
import { recordFact } from "../../../db/repositories/facts";
import { archiveEntity } from "../../../db/repositories/memory";
import { capture, claims, cronTick, DAY, email, stepsRun } from "./digest-fixtures";
import { keptWords, newPerson, runOnce, sentTexts, standInUrl, testDb, testWorkflows } from "./harness";

/** The "people" step mocked to these people at `now`'s date (a fresh array per run: @inngest/test appends each run's step results to it). */
const onlyPeople = (now: Date, ...ids: string[]) => [
  { id: "people", handler: () => ids.map((userId) => ({ userId, localDate: now.toISOString().slice(0, 10) })) },
];

describe("weekly-review", () => {
  it("lists the people reachable in Telegram whose clock shows Sunday 18:xx (the real step, run alone)", async () => {
    const berlin = await newPerson({ telegram: true, timezone: "Europe/Berlin" });
    const utc = await newPerson({ telegram: true });
    const offTelegram = await newPerson({ timezone: "Europe/Berlin" });
    // Sunday 22 November 2026, 17:00Z: 18:00 in Berlin, 17:00 in UTC.
    const { result } = await new InngestTestEngine({
      function: testWorkflows({ now: new Date("2026-11-22T17:00:00Z") }).functions.weeklyReview,
    }).executeStep("people", { events: [cronTick("TZ=UTC 0 * * * 0,1")] });
    expect(result).toEqual(expect.arrayContaining([{ userId: berlin.id, localDate: "2026-11-22" }]));
    const listed = (result as Array<{ userId: string }>).map((p) => p.userId);
    expect(listed).not.toContain(utc.id);
    expect(listed).not.toContain(offTelegram.id);
  });

  it("sends a summary of the week's new memories by type, facts and mail; once per ISO week", async () => {
    const person = await newPerson({ telegram: true });
    // Before the week: a backdated entity. Archived: not part of memory any more.
    const old = await capture(person.id, "book", "An Old Book");
    await testDb().withUser(person.id, (tx) =>
      tx.execute(sql`update entities set created_at = now() - interval '10 days' where id = ${old}`),
    );
    const archived = await capture(person.id, "book", "Archived Book");
    await testDb().withUser(person.id, (tx) => archiveEntity(tx, archived));
    await capture(person.id, "book", "Dune");
    await capture(person.id, "book", "Piranesi");
    await capture(person.id, "place", "Portland, Oregon");
    await capture(person.id, "book", 'Eats, Shoots & Leaves: The "Zero Tolerance" Approach');
    await capture(person.id, "person", "Maria");
    await testDb().withUser(person.id, (tx) =>
      recordFact(tx, person.id, {
        statement: "Lives in Berlin",
        category: "home",
        subject: "home city",
        confidence: 0.9,
        embedding: null,
        sourceId: null,
      }),
    );
    // Mail is counted, its senders are not "what you added".
    await email(person.id, { name: "Weekly Digest", email: "digest@news.example" }, "Your digest");

    const now = new Date();
    const { weeklyReview } = testWorkflows({ now }).functions;
    const first = await runOnce(weeklyReview, cronTick("TZ=UTC 0 * * * 0,1"), { steps: onlyPeople(now, person.id) });
    expect(first.error).toBeUndefined();
    expect(first.result).toEqual({ people: 1, sent: 1 });
    expect(await keptWords(first, /Dune|Piranesi|Maria|Berlin|Your week/)).toEqual([]);
    const expected = [
      "Your week in memory:",
      '• book: Eats, Shoots & Leaves: The "Zero Tolerance" Approach, Piranesi, Dune',
      "• person: Maria",
      "• place: Portland, Oregon",
      "",
      "Things I learned about you: Lives in Berlin.",
      "",
      "1 email came in.",
      "",
      "Say /memories to see everything, or /forget to drop something.",
    ].join("\n");
    expect(await sentTexts(person.chatId!)).toEqual([expected]);
    expect(await claims(person.id, "weekly-review")).toEqual([{ external_id: isoWeek(now), payload: { text: expected } }]);

    // The same week again, even with something new: nothing more.
    await capture(person.id, "book", "Klara and the Sun");
    const second = await runOnce(weeklyReview, cronTick("TZ=UTC 0 * * * 0,1"), { steps: onlyPeople(now, person.id) });
    expect(second.result).toEqual({ people: 1, sent: 0 });
    expect(await sentTexts(person.chatId!)).toEqual([expected]);

    // A week later: the new week's review, with only what came after the first one.
    const nextWeek = new Date(now.getTime() + 7 * DAY);
    const third = await runOnce(testWorkflows({ now: nextWeek }).functions.weeklyReview, cronTick("TZ=UTC 0 * * * 0,1"), {
      steps: onlyPeople(nextWeek, person.id),
    });
    expect(third.result).toEqual({ people: 1, sent: 1 });
    const texts = await sentTexts(person.chatId!);
    expect(texts).toHaveLength(2);
    expect(texts[1]).toBe(
      "Your week in memory:\n• book: Klara and the Sun\n\nSay /memories to see everything, or /forget to drop something.",
    );
    expect((await claims(person.id, "weekly-review")).map((c) => c.external_id)).toEqual([isoWeek(now), isoWeek(nextWeek)]);
  });

  it("sends nothing for an empty week, nor to a person without Telegram, nor to anyone else", async () => {
    const busyLastWeek = await newPerson({ telegram: true });
    await capture(busyLastWeek.id, "book", "Dune");
    await email(busyLastWeek.id, { name: "Someone", email: "someone@mail.example" }, "Hello");
    const idle = await newPerson({ telegram: true });
    const noChat = await newPerson();
    await capture(noChat.id, "book", "Dune");
    const bystander = await newPerson({ telegram: true });
    await capture(bystander.id, "book", "Not in this run");

    // Eight days on, this week holds nothing new for busyLastWeek; idle never had anything.
    const eightDaysOn = new Date(Date.now() + 8 * DAY);
    const later = testWorkflows({ now: eightDaysOn }).functions.weeklyReview;
    const { result } = await runOnce(later, cronTick("TZ=UTC 0 * * * 0,1"), { steps: onlyPeople(eightDaysOn, busyLastWeek.id, idle.id) });
    expect(result).toEqual({ people: 2, sent: 0 });
    // This week, the person without a chat has something, but nowhere to receive it.
    const { result: now } = await runOnce(testWorkflows().functions.weeklyReview, cronTick("TZ=UTC 0 * * * 0,1"), {
      steps: onlyPeople(new Date(), noChat.id),
    });
    expect(now).toEqual({ people: 1, sent: 0 });

    for (const person of [busyLastWeek, idle, bystander]) expect(await sentTexts(person.chatId!)).toEqual([]);
    for (const person of [busyLastWeek, idle, noChat, bystander]) expect(await claims(person.id, "weekly-review")).toEqual([]);
  });

  it("one person whose review fails (the bot is blocked) is logged and counted; the others, in that batch and the next, get theirs", async () => {
    const blocked = await newPerson({ telegram: true });
    await capture(blocked.id, "book", "Blocked Book");
    const neighbour = await newPerson({ telegram: true });
    await capture(neighbour.id, "book", "Neighbour Book");
    // Enough people without a week to tell that the last one is reviewed in a later step.
    const idle = await Promise.all(Array.from({ length: REVIEWS_PER_STEP }, () => newPerson({ telegram: true })));
    const later = await newPerson({ telegram: true });
    await capture(later.id, "book", "Later Book");
    await fetch(`${standInUrl}/__fail`, {
      method: "POST",
      body: JSON.stringify({
        method: "sendMessage",
        chatId: blocked.chatId,
        errorCode: 403,
        description: "Forbidden: bot was blocked by the user",
        times: 10,
      }),
    });

    const now = new Date();
    const ids = [blocked.id, neighbour.id, ...idle.map((p) => p.id), later.id];
    const { result, error, ctx } = await runOnce(testWorkflows({ now }).functions.weeklyReview, cronTick("TZ=UTC 0 * * * 0,1"), {
      steps: onlyPeople(now, ...ids),
    });
    expect(error).toBeUndefined();
    expect(result).toEqual({ people: ids.length, sent: 2, failed: 1 });
    expect(stepsRun(ctx)).toEqual(["people", "review-0", "review-1"]);
    expect(await sentTexts(neighbour.chatId!)).toHaveLength(1);
    expect(await sentTexts(later.chatId!)).toHaveLength(1);
    expect(await sentTexts(blocked.chatId!)).toEqual([]);
  });

  it("names the ISO week (Monday to Sunday, the year of its Thursday)", () => {
    expect(isoWeek(new Date("2026-11-22T18:00:00Z"))).toBe("2026-W47"); // a Sunday, when the cron runs
    expect(isoWeek(new Date("2026-11-23T00:00:00Z"))).toBe("2026-W48");
    expect(isoWeek(new Date("2027-01-03T18:00:00Z"))).toBe("2026-W53"); // 2026 has 53 ISO weeks
    expect(isoWeek(new Date("2024-12-30T12:00:00Z"))).toBe("2025-W01");
  });
});
