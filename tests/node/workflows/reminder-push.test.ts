// Guards issue 27's reminders by Web Push: reminder-deliver (the real function, @inngest/test) pushes a
// web-only person's reminder to each of their devices through a strict push-service stand-in (VAPID
// checked, aes128gcm decrypted with the device's keys), exactly once under a redelivered event, high
// urgency and stale after an hour, and once through a restart between its send and Inngest's record of
// it; a person with Telegram too gets it on both; a push service that is
// down fails the push step (Inngest retries it) and it goes out once when it is back; a subscription
// that is gone (410) is pruned, and with no device left the reminder is undeliverable, never lost silently.
import { rootCertificates } from "node:tls";
import { Agent, setGlobalDispatcher } from "undici";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordSource } from "../../../db/repositories/memory";
import { listPushDevices, savePushSubscription } from "../../../db/repositories/push-subscriptions";
import { createReminder } from "../../../db/repositories/reminders";
import { TokenCipher } from "../../../db/token-cipher";
import { generateVapidKeys } from "../../../ops/push-keys";
import { setNotify } from "../../../db/repositories/people";
import { loadConfig } from "../../../platform/config";
import { startPushService, type PushService } from "../push-service";
import { newPerson, runOnce, sentTexts, TOKEN_KEY, testDb, testSettings, testWorkflows } from "./harness";

let push: PushService;
let workflows: ReturnType<typeof testWorkflows>;
beforeAll(async () => {
  push = await startPushService();
  // Node's fetch trusts the stand-in's test CA (the Worker gets it with NODE_EXTRA_CA_CERTS).
  setGlobalDispatcher(new Agent({ connect: { ca: [...rootCertificates, push.ca] } }));
  const keys = await generateVapidKeys();
  workflows = testWorkflows({
    config: loadConfig({ ...testSettings, VAPID_PUBLIC_KEY: keys.publicKey, VAPID_PRIVATE_KEY: keys.privateKey }),
  });
});
afterAll(() => push?.stop());

const elapsed = () => [{ id: "wait-until-due", handler: () => null }];

async function scheduled(userId: string, text: string) {
  const at = new Date(Date.now() + 60_000);
  const eventId = await testDb().withUser(userId, async (tx) => {
    const sourceId = await recordSource(tx, userId, { kind: "web", externalId: `msg-${crypto.randomUUID()}`, payload: { text } });
    return createReminder(tx, userId, { text, at, sourceId });
  });
  return { name: "schedule/reminder.created", id: `reminder-${eventId}`, data: { userId, eventId, at: at.toISOString() } } as const;
}

async function subscribe(userId: string, answer: 201 | 410 | 503 = 201) {
  const device = push.device(answer);
  await testDb().withUser(userId, (tx) => savePushSubscription(tx, userId, device, "Chrome on Android", new TokenCipher(TOKEN_KEY), 20));
  return device;
}

async function status(userId: string, eventId: string) {
  const [row] = (await testDb().withUser(userId, (tx) =>
    tx.execute(sql`select status from events where id = ${eventId}`),
  )) as unknown as Array<{
    status: string;
  }>;
  return row?.status;
}

describe("reminders by Web Push", () => {
  it("pushes a web-only person's reminder to their device once, even when the event comes twice", async () => {
    const person = await newPerson();
    const device = await subscribe(person.id);
    const event = await scheduled(person.id, "water the plants");
    const fn = workflows.functions.reminderDeliver;
    const first = await runOnce(fn, event, { steps: elapsed() });
    expect(first.error).toBeUndefined();
    expect(first.result).toEqual({ delivered: true, channels: ["push"] });
    const second = await runOnce(fn, event, { steps: elapsed() });
    expect(second.result).toEqual({ delivered: false, reason: "not scheduled (already delivered or removed)" });
    const mine = push.messages.filter((m) => m.device === device.id);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ ttl: 3600, urgency: "high", topic: event.data.eventId.replace(/-/g, "").slice(0, 32) });
    expect(mine[0]!.payload).toMatchObject({
      title: "⏰ Reminder",
      body: "water the plants",
      tag: `reminder-${event.data.eventId}`,
      url: "/app/reminders",
    });
    expect(await status(person.id, event.data.eventId)).toBe("delivered");
    expect(push.refused).toEqual([]);
  });

  // A restart: the process ran the push step — the push went out and was noted in the row — and died
  // before Inngest recorded the step. Inngest runs the function again with what it did record (the
  // claim, the sleep), so the push step runs a second time: it finds its send noted and sends nothing.
  it("pushes it once through a restart between the send and Inngest's record of it", async () => {
    const person = await newPerson();
    const device = await subscribe(person.id);
    const event = await scheduled(person.id, "take the cake out");
    const fn = workflows.functions.reminderDeliver;
    // The first run: the push goes out; its "finish" never runs (the process is gone), so the row stays claimed.
    await runOnce(fn, event, { steps: [...elapsed(), { id: "finish", handler: () => undefined }] });
    expect(await status(person.id, event.data.eventId)).toBe("delivering");
    expect(push.messages.filter((m) => m.device === device.id)).toHaveLength(1);
    // What Inngest recorded before the process died: the claim (the push step's outcome was lost).
    const recorded = { claimed: true, telegram: false, push: true };
    const again = await runOnce(fn, event, { steps: [...elapsed(), { id: "claim", handler: () => recorded }] });
    expect(again.error).toBeUndefined();
    expect(again.result).toEqual({ delivered: true, channels: ["push"] });
    expect(push.messages.filter((m) => m.device === device.id).map((m) => m.payload.body)).toEqual(["take the cake out"]);
    expect(await status(person.id, event.data.eventId)).toBe("delivered");
  });

  // With two channels the sends are parallel steps, which @inngest/test runs in racing chains; so each
  // run here leaves one channel's step to run for real and gives the other its memoized outcome, as
  // Inngest does when it retries a run whose other step already succeeded.
  it("reaches a person with Telegram and a device on both; a retry resends neither", async () => {
    const person = await newPerson({ telegram: true });
    const device = await subscribe(person.id);
    const event = await scheduled(person.id, "call Ana");
    const fn = workflows.functions.reminderDeliver;
    const pushed = await runOnce(fn, event, { steps: [...elapsed(), { id: "send-telegram", handler: () => "sent" }] });
    expect(pushed.result).toEqual({ delivered: true, channels: ["telegram", "push"] });
    expect(push.messages.filter((m) => m.device === device.id).map((m) => m.payload.body)).toEqual(["call Ana"]);
    expect(await status(person.id, event.data.eventId)).toBe("delivered");
    expect(await sentTexts(person.chatId!)).toEqual([]);
  });

  it("retries the push while its service is down, and sends it once when it is back", async () => {
    const person = await newPerson();
    const device = await subscribe(person.id, 503);
    const event = await scheduled(person.id, "take the bins out");
    const fn = workflows.functions.reminderDeliver;
    const down = await runOnce(fn, event, { steps: elapsed() });
    expect(JSON.stringify(down.error)).toMatch(/push: 1 push services did not answer/);
    expect(push.messages.filter((m) => m.device === device.id)).toEqual([]);
    expect(await status(person.id, event.data.eventId)).toBe("delivering");
    // Inngest's retry, once the service is back: the claim is kept from the first attempt.
    push.setAnswer(device.id, 201);
    const retried = await runOnce(fn, event, {
      steps: [...elapsed(), { id: "claim", handler: () => ({ claimed: true, telegram: false, push: true }) }],
    });
    expect(retried.result).toEqual({ delivered: true, channels: ["push"] });
    expect(push.messages.filter((m) => m.device === device.id)).toHaveLength(1);
    expect(await status(person.id, event.data.eventId)).toBe("delivered");
  });

  it("prunes a subscription that is gone, and with no device left the reminder is undeliverable", async () => {
    const person = await newPerson();
    await subscribe(person.id, 410);
    const event = await scheduled(person.id, "renew the passport");
    const run = await runOnce(workflows.functions.reminderDeliver, event, { steps: elapsed() });
    expect(run.result).toEqual({ delivered: false, reason: "no channel took it" });
    expect(await testDb().withUser(person.id, listPushDevices)).toEqual([]);
    expect(await status(person.id, event.data.eventId)).toBe("undeliverable");
  });

  it("follows the person's choice: reminders to Telegram only reach Telegram alone", async () => {
    const person = await newPerson({ telegram: true });
    const device = await subscribe(person.id);
    await setNotify(testDb(), person.id, { reminder: "telegram" });
    const event = await scheduled(person.id, "feed the cat");
    const run = await runOnce(workflows.functions.reminderDeliver, event, { steps: elapsed() });
    expect(run.result).toEqual({ delivered: true, channels: ["telegram"] });
    expect(push.messages.filter((m) => m.device === device.id)).toEqual([]);
  });

  it("brings a web-only person their morning brief by push", async () => {
    const person = await newPerson();
    const device = await subscribe(person.id);
    // Something coming up today: the brief has something to say.
    await scheduled(person.id, "dentist at noon");
    const date = new Date().toISOString().slice(0, 10);
    const run = await runOnce(workflows.functions.briefGenerate, {
      name: "brief/requested",
      id: `brief-${person.id}-${date}`,
      data: { userId: person.id, date },
    });
    expect(run.error).toBeUndefined();
    expect(run.result).toEqual({ sent: true });
    const [brief] = push.messages.filter((m) => m.device === device.id);
    expect(brief).toMatchObject({ topic: "brief", urgency: "normal", ttl: 43_200 });
    expect(brief!.payload).toMatchObject({ title: "Your morning brief", tag: "brief" });
    expect(brief!.payload.body).toMatch(/dentist at noon/);
  });
});
