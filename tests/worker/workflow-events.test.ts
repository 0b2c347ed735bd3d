// Guards the events the agent hands to the workflows: every model turn (Telegram or web) emits
// conversation/turn.completed with a stable id and the message's ids, never its words (those are in the
// person's sources row in Postgres, where fact-extract reads them), a reminder emits
// schedule/reminder.created, and an unreachable Inngest never fails or holds up a turn. Inngest is the
// loopback stand-in.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../platform/config";
import type { UserAgent } from "../../agents/user-agent";
import { emitEvents } from "../../agents/workflows/client";
import { channelOf, mailNotificationReceived, turnCompleted } from "../../agents/workflows/events";
import { chatAs, eventually, newChatId, newPerson, sessionCookie, testDatabase } from "./helpers";
import { scriptedModel } from "./scripted-model";

interface SentEvent {
  id: string;
  name: string;
  data: Record<string, unknown> & { userId: string };
  deliveries: number;
}

function eventsOf(name: string, userId: string, count: number): Promise<SentEvent[]> {
  return eventually(
    async () =>
      ((await (await fetch(`${env.STAND_IN_URL}/__inngest/events?name=${encodeURIComponent(name)}`)).json()) as SentEvent[]).filter(
        (e) => e.data.userId === userId,
      ),
    (mine) => mine.length >= count,
  );
}

/** The person's sources row of a message: its kind and its words. */
async function messageRow(userId: string, externalId: string) {
  const [row] = (await testDatabase().withUser(userId, (tx) =>
    tx.execute(sql`select kind, payload ->> 'text' as text from sources where external_id = ${externalId}`),
  )) as unknown as Array<{ kind: string; text: string }>;
  return row;
}

describe("conversation/turn.completed", () => {
  it("follows each Telegram model turn, with the message's provenance as its id and no words (commands emit nothing)", async () => {
    const person = await newPerson();
    const agent = await getAgentByName(env.UserAgent, person.id);
    const chatId = newChatId();
    const updateId = Math.floor(Math.random() * 1e9);
    await agent.enqueueTelegramMessage({ updateId, chatId, messageId: 41, text: "/help" });
    await agent.enqueueTelegramMessage({ updateId: updateId + 1, chatId, messageId: 42, text: "I live in Lisbon. I read Dune." });
    await agent.settle();
    const [event, ...more] = await eventsOf("conversation/turn.completed", person.id, 1);
    expect(more).toEqual([]);
    expect(event).toMatchObject({ id: `turn-${person.id}-${chatId}:42` });
    expect(event?.data).toEqual({ userId: person.id, channel: "telegram", source: { kind: "telegram", externalId: `${chatId}:42` } });
    // The words are where fact-extract reads them: the person's own row, under row-level security.
    expect(await messageRow(person.id, `${chatId}:42`)).toEqual({ kind: "telegram", text: "I live in Lisbon. I read Dune." });
  });

  it("follows each web chat turn", async () => {
    const person = await newPerson();
    await chatAs(await sessionCookie(person), "I work at Acme.");
    const [event] = await eventsOf("conversation/turn.completed", person.id, 1);
    expect(event?.data).toMatchObject({ channel: "web", source: { kind: "web" } });
    expect(JSON.stringify(event)).not.toContain("Acme");
    const externalId = (event?.data.source as { externalId: string } | undefined)?.externalId ?? "";
    expect(event?.id).toBe(`turn-${person.id}-${externalId}`);
    expect(await messageRow(person.id, externalId)).toEqual({ kind: "web", text: "I work at Acme." });
  });

  it("is dropped, quickly and quietly, when Inngest cannot be reached", async () => {
    const person = await newPerson();
    const config = loadConfig({ ...env, INNGEST_BASE_URL: "http://127.0.0.1:9" });
    const started = Date.now();
    const sent = await emitEvents(
      config,
      turnCompleted.create({ userId: person.id, channel: "web", source: { kind: "web", externalId: "x" } }),
      { test: true },
    );
    expect(sent).toBe(false);
    expect(Date.now() - started).toBeLessThan(5_000);
    // After a failure the address is paused: the next event is dropped at once, without a retry.
    const again = Date.now();
    expect(
      await emitEvents(config, turnCompleted.create({ userId: person.id, channel: "web", source: { kind: "web", externalId: "y" } }), {}),
    ).toBe(false);
    expect(Date.now() - again).toBeLessThan(50);
  });

  it("still accepts an event sent before `surface` was renamed `channel`, or with the words (queued or retried), and reads its channel", async () => {
    const turn = { userId: crypto.randomUUID(), source: { kind: "telegram", externalId: "7:42" } };
    // What the SDK checks an incoming event's data with before the function runs.
    const check = (data: unknown) => turnCompleted.schema["~standard"].validate(data);
    const inFlight = turnCompleted.create({ ...turn, surface: "telegram" });
    await expect(inFlight.validate()).resolves.toBeUndefined();
    expect((await check(inFlight.data)).issues).toBeUndefined();
    expect(channelOf(inFlight.data)).toBe("telegram");
    const current = turnCompleted.create({ ...turn, channel: "web" });
    expect((await check(current.data)).issues).toBeUndefined();
    expect(channelOf(current.data)).toBe("web");
    // Sent before the words moved to Postgres: the text came along (and may come with either name).
    expect((await check({ ...turn, channel: "telegram", text: "I live in Lisbon." })).issues).toBeUndefined();
    expect((await check({ ...turn, surface: "telegram", text: "I live in Lisbon." })).issues).toBeUndefined();
    // Neither name, or a channel that does not exist, is refused as before.
    expect((await check(turn)).issues).toBeDefined();
    expect((await check({ ...turn, surface: "email" })).issues).toBeDefined();
    expect((await check({ ...turn, channel: "email" })).issues).toBeDefined();
  });
});

describe("mail/notification.received", () => {
  it("needs no mailbox address (the person's connection knows it), and still accepts one sent with it", async () => {
    const check = (data: unknown) => mailNotificationReceived.schema["~standard"].validate(data);
    const note = { userId: crypto.randomUUID(), historyId: "12345" };
    expect((await check(note)).issues).toBeUndefined();
    expect((await check({ ...note, emailAddress: "someone@gmail.example" })).issues).toBeUndefined();
  });
});

describe("schedule/reminder.created", () => {
  it("is emitted for a reminder the model schedules, keyed by the reminder's row", async () => {
    const person = await newPerson();
    const agent = await getAgentByName(env.UserAgent, person.id);
    const at = new Date(Date.now() + 3_600_000).toISOString();
    await runInDurableObject(agent, (instance: UserAgent) => {
      instance.modelOverride = scriptedModel([{ tool: "schedule_create", input: { text: "Call mum", at } }, { text: "I'll remind you." }]);
    });
    await agent.enqueueTelegramMessage({
      updateId: Math.floor(Math.random() * 1e9),
      chatId: newChatId(),
      messageId: 1,
      text: "remind me to call mum in an hour",
    });
    await agent.settle();
    const [event] = await eventsOf("schedule/reminder.created", person.id, 1);
    expect(event?.data).toEqual({ userId: person.id, eventId: expect.any(String), at });
    expect(event?.id).toBe(`reminder-${event?.data.eventId}`);
  });
});
