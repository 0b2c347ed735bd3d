// Guards the person's view of their reminders: /reminders lists the upcoming ones in local time,
// numbered; /cancel <n> cancels the n-th of the list shown last (stale or wrong numbers answered
// plainly, never another reminder); GET /api/reminders lists upcoming and past with their status;
// DELETE /api/reminders/:id cancels (idempotent; 400 malformed, 404 not theirs, 409 already sent).
// schedule_create (the model's tool, in the real AI SDK loop with a scripted model) keeps at most
// IMPORT_CAPS.futureReminders waiting, as an import does, and says so in an error the model can relay.
import { generateText, isStepCount } from "ai";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { localEmbedder } from "../../agents/integrations/model/embeddings";
import { turnTools } from "../../agents/turn/tools/index";
import { IMPORT_CAPS } from "../../db/repositories/import-caps";
import { createReminder } from "../../db/repositories/reminders";
import { call, newChatId, newPerson, sessionCookie, testDatabase } from "./helpers";
import { scriptedModel } from "./scripted-model";
import { converse, personOfChat } from "./telegram-updates";

const HOUR = 3_600_000;
const SAME_ORIGIN = { origin: "https://soma.test" };

async function remind(userId: string, text: string, at: Date): Promise<string> {
  return testDatabase().withUser(userId, (tx) => createReminder(tx, userId, { text, at, sourceId: null }));
}

async function setStatus(userId: string, id: string, status: string): Promise<void> {
  await testDatabase().withUser(userId, (tx) => tx.execute(sql`update events set status = ${status} where id = ${id}`));
}

async function statuses(userId: string): Promise<Record<string, string>> {
  const rows = (await testDatabase().withUser(userId, (tx) =>
    tx.execute(sql`select payload ->> 'text' as text, status from events where kind = 'reminder'`),
  )) as unknown as Array<{ text: string; status: string }>;
  return Object.fromEntries(rows.map((r) => [r.text, r.status]));
}

/** How /reminders shows `at` in Berlin ("Tue 24 Nov, 09:00"). */
function berlin(at: Date): string {
  return at.toLocaleString("en-GB", {
    timeZone: "Europe/Berlin",
    weekday: "short",
    day: "numeric",
    month: "short",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  });
}

describe("/reminders and /cancel in Telegram", () => {
  it("lists upcoming reminders in local time, soonest first, and cancels by the number shown", async () => {
    const chatId = newChatId();
    await converse(chatId, ["/start", "/timezone Berlin"]);
    const userId = await personOfChat(chatId);
    const dentist = new Date(Math.floor((Date.now() + 26 * HOUR) / 60_000) * 60_000);
    const mum = new Date(Math.floor((Date.now() + 2 * HOUR) / 60_000) * 60_000);
    await remind(userId, "Dentist", dentist);
    await remind(userId, "Call mum", mum);
    const sent = await remind(userId, "Already sent", new Date(Date.now() + 3 * HOUR));
    await setStatus(userId, sent, "delivered");

    const [list, cancelled, again, wrong, usage, listAfter] = await converse(
      chatId,
      ["/reminders", "/cancel 2", "/cancel 2", "/cancel 3", "/cancel two", "/reminders"],
      2,
    );
    expect(list).toBe(
      [
        `Your upcoming reminders (Europe/Berlin time):`,
        `1. ${berlin(mum)} — Call mum`,
        `2. ${berlin(dentist)} — Dentist`,
        "",
        "Morning brief: every day at 08:00 · Weekly review: every Sunday at 18:00",
        "",
        "Cancel one with /cancel <number>, e.g. /cancel 1",
      ].join("\n"),
    );
    expect(cancelled).toBe(`Cancelled reminder 2: "Dentist" at ${berlin(dentist)}. I won't send it.`);
    expect(again).toBe(`Reminder 2 ("Dentist" at ${berlin(dentist)}) was already cancelled.`);
    expect(wrong).toBe("There is no reminder 3 in the list I showed you last (it had 1 to 2). Send /reminders to see your reminders now.");
    expect(usage).toBe("Tell me which reminder to cancel by its number in /reminders, e.g. /cancel 2");
    expect(listAfter).toBe(
      [
        `Your upcoming reminders (Europe/Berlin time):`,
        `1. ${berlin(mum)} — Call mum`,
        "",
        "Morning brief: every day at 08:00 · Weekly review: every Sunday at 18:00",
        "",
        "Cancel one with /cancel <number>, e.g. /cancel 1",
      ].join("\n"),
    );
    expect(await statuses(userId)).toEqual({ Dentist: "cancelled", "Call mum": "scheduled", "Already sent": "delivered" });
  });

  it("keeps the numbers of the list shown last: a reminder added or sent since never shifts them", async () => {
    const chatId = newChatId();
    await converse(chatId, ["/start"]);
    const userId = await personOfChat(chatId);
    const first = await remind(userId, "First", new Date(Date.now() + 2 * HOUR));
    await remind(userId, "Second", new Date(Date.now() + 3 * HOUR));
    await converse(chatId, ["/reminders"], 1);
    // Since that list: an earlier reminder appears, and the first one is sent.
    await remind(userId, "Sooner", new Date(Date.now() + HOUR));
    await setStatus(userId, first, "delivered");

    const [sentAlready, second] = await converse(chatId, ["/cancel 1", "/cancel 2"], 2);
    expect(sentAlready).toMatch(/^Reminder 1 \("First" at .+\) was already sent\.$/);
    expect(second).toMatch(/^Cancelled reminder 2: "Second" at /);
    expect(await statuses(userId)).toEqual({ First: "delivered", Second: "cancelled", Sooner: "scheduled" });
  });

  it("lists a repeating reminder by its rule, and the brief and the review as the person moved them by saying so", async () => {
    const chatId = newChatId();
    const [, repeating, brief, review, list] = await converse(chatId, [
      "/start",
      "remind me every Monday at 9 to water the plants",
      "brief at 7:15 on weekdays",
      "turn off the weekly review",
      "/reminders",
    ]);
    expect(repeating).toMatch(/^Repeating reminder set: water the plants, every week on Monday at 09:00 \(next: Monday /);
    expect(brief).toMatch(/^Done: your morning brief now comes every weekday at 07:15 \(next: \d{4}-\d\d-\d\d 07:15, UTC\)\./);
    expect(review).toMatch(/^Your weekly review is off\./);
    expect(list).toMatch(/^Your upcoming reminders \(UTC time\):\n1\. \w{3} \d+ \w{3}, 09:00 — water the plants \(repeats\)\n/);
    expect(list).toContain(
      [
        "Repeating:",
        "• water the plants — every week on Monday at 09:00",
        "",
        "Morning brief: every weekday at 07:15 · Weekly review: off",
      ].join("\n"),
    );
  });

  it("answers a /cancel before any list, after an empty list, and for a reminder being sent", async () => {
    const chatId = newChatId();
    const replies = await converse(chatId, ["/start", "/cancel 1", "/reminders", "/cancel 1"]);
    expect(replies[1]).toBe("Send /reminders first: it numbers your upcoming reminders, then /cancel <number> cancels one.");
    expect(replies[2]).toBe(
      [
        'You have no upcoming reminders. Ask me for one, e.g. "remind me to call mum tomorrow at 9".',
        "",
        "Morning brief: every day at 08:00 · Weekly review: every Sunday at 18:00",
      ].join("\n"),
    );
    expect(replies[3]).toBe(
      "There is no reminder 1 in the list I showed you last (it was empty). Send /reminders to see your reminders now.",
    );

    const userId = await personOfChat(chatId);
    const id = await remind(userId, "Stretch", new Date(Date.now() + HOUR));
    await converse(chatId, ["/reminders"], 4);
    await setStatus(userId, id, "delivering");
    const [late] = await converse(chatId, ["/cancel 1"], 5);
    expect(late).toMatch(/^Reminder 1 \("Stretch" at .+\) is being sent right now; it can't be cancelled any more\.$/);
    expect(await statuses(userId)).toEqual({ Stretch: "delivering" });
  });
});

describe("/api/reminders", () => {
  it("lists upcoming (soonest first) and past (newest first) reminders with their status, only the person's own", async () => {
    const person = await newPerson();
    const other = await newPerson();
    const cookie = await sessionCookie(person);
    const later = await remind(person.id, "Later", new Date(Date.now() + 5 * HOUR));
    const soon = await remind(person.id, "Soon", new Date(Date.now() + HOUR));
    const done = await remind(person.id, "Done", new Date(Date.now() - 2 * HOUR));
    await setStatus(person.id, done, "delivered");
    const dropped = await remind(person.id, "Dropped", new Date(Date.now() + 2 * HOUR));
    await setStatus(person.id, dropped, "cancelled");
    await remind(other.id, "Someone else's", new Date(Date.now() + HOUR));

    expect((await call("/api/reminders")).status).toBe(401);
    const response = await call("/api/reminders", { headers: { cookie } });
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      upcoming: Array<{ id: string; text: string; status: string; at: string }>;
      past: Array<{ id: string; text: string; status: string }>;
    };
    expect(body.upcoming.map((r) => [r.id, r.text, r.status])).toEqual([
      [soon, "Soon", "scheduled"],
      [later, "Later", "scheduled"],
    ]);
    expect(body.upcoming[0]!.at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(body.past.map((r) => [r.id, r.text, r.status])).toEqual([
      [dropped, "Dropped", "cancelled"],
      [done, "Done", "delivered"],
    ]);
  });

  it("DELETE cancels a reminder once and answers the same again; bad ids and other people's are 4xx", async () => {
    const person = await newPerson();
    const other = await newPerson();
    const cookie = await sessionCookie(person);
    const del = (id: string, headers: Record<string, string> = SAME_ORIGIN) =>
      call(`/api/reminders/${id}`, { method: "DELETE", headers: { cookie, ...headers } });
    const mine = await remind(person.id, "Water plants", new Date(Date.now() + HOUR));
    const theirs = await remind(other.id, "Their appointment", new Date(Date.now() + HOUR));
    const sent = await remind(person.id, "Sent one", new Date(Date.now() - HOUR));
    await setStatus(person.id, sent, "delivered");

    expect((await del(mine, { origin: "https://evil.example" })).status).toBe(403);
    const first = await del(mine);
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ cancelled: true, reminder: { id: mine, text: "Water plants", status: "cancelled" } });
    const again = await del(mine);
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ cancelled: true, reminder: { id: mine, status: "cancelled" } });

    const malformed = await del("not-a-uuid");
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ error: { code: "bad_request", message: "Reminder ids are UUIDs." } });
    for (const id of [theirs, crypto.randomUUID()]) {
      const missing = await del(id);
      expect(missing.status).toBe(404);
      expect(await missing.json()).toMatchObject({ error: { code: "not_found", message: "No such reminder." } });
    }
    const past = await del(sent);
    expect(past.status).toBe(409);
    expect(await past.json()).toMatchObject({ error: { code: "conflict" } });

    expect(await statuses(person.id)).toEqual({ "Water plants": "cancelled", "Sent one": "delivered" });
    expect(await statuses(other.id)).toEqual({ "Their appointment": "scheduled" });
  });
});

describe("schedule_create keeps at most IMPORT_CAPS.futureReminders waiting (issue 25)", () => {
  const CAP = IMPORT_CAPS.futureReminders;

  /** One turn in which the model asks for one reminder; the tool's result. */
  async function ask(
    userId: string,
    text: string,
    source = crypto.randomUUID(),
    at = new Date(Date.now() + 5 * HOUR).toISOString(),
  ): Promise<Record<string, unknown>> {
    const result = await generateText({
      model: scriptedModel([{ tool: "schedule_create", input: { text, at } }, { text: "ok" }]),
      tools: turnTools({ db: testDatabase(), userId, embedder: localEmbedder, source: { kind: "test", externalId: source } }),
      stopWhen: isStepCount(2),
      prompt: `remind me: ${text}`,
    });
    return result.steps[0]!.toolResults[0]!.output as Record<string, unknown>;
  }

  /** `count` reminders still to come (and, around them, reminders that no longer wait: they never count). */
  async function waiting(userId: string, count: number): Promise<void> {
    await testDatabase().withUser(userId, async (tx) => {
      for (let i = 0; i < count; i++)
        await createReminder(tx, userId, { text: `r${i}`, at: new Date(Date.now() + (i + 1) * HOUR), sourceId: null });
      for (const status of ["delivered", "cancelled"]) {
        const id = await createReminder(tx, userId, { text: status, at: new Date(Date.now() + HOUR), sourceId: null });
        await tx.execute(sql`update events set status = ${status} where id = ${id}`);
      }
      await createReminder(tx, userId, { text: "past", at: new Date(Date.now() - HOUR), sourceId: null });
    });
  }

  const scheduled = async (userId: string) =>
    (
      (await testDatabase().withUser(userId, (tx) =>
        tx.execute(sql`select count(*)::int as n from events where kind = 'reminder' and status = 'scheduled' and occurred_at > now()`),
      )) as unknown as Array<{ n: number }>
    )[0]!.n;

  it("refuses the one past the cap with an error the model can relay, and writes nothing", async () => {
    const person = await newPerson();
    await waiting(person.id, CAP - 1);
    const [source, at] = [crypto.randomUUID(), new Date(Date.now() + 5 * HOUR).toISOString()];
    const last = await ask(person.id, "the last one that fits", source, at);
    expect(last).toMatchObject({ eventId: expect.any(String) });
    expect(await ask(person.id, "one too many")).toEqual({
      error: `You already have ${CAP} reminders waiting; that is the most Soma keeps. Cancel one you no longer need (/reminders, then /cancel <number>, or the web app), or wait until one has been sent, then ask again.`,
    });
    expect(await scheduled(person.id)).toBe(CAP);
    // A re-run of the turn that made the last one (same message, same reminder) still gets it back.
    expect(await ask(person.id, "the last one that fits", source, at)).toMatchObject({ eventId: last.eventId });
    expect(await scheduled(person.id)).toBe(CAP);
  });

  // The embedded Postgres (PGlite) runs one transaction at a time, so here this holds by itself; on a
  // real server (SOMA_TEST_DATABASE_URL) it is the advisory lock in createReminderWithinCap that holds it.
  it("lets only one of two turns at once take the last place", async () => {
    const person = await newPerson();
    await waiting(person.id, CAP - 1);
    const results = await Promise.all([ask(person.id, "first at once"), ask(person.id, "second at once")]);
    expect(results.filter((r) => "eventId" in r)).toHaveLength(1);
    expect(results.filter((r) => "error" in r)).toHaveLength(1);
    expect(await scheduled(person.id)).toBe(CAP);
  });
});
