// Guards the deliveries a person's agent runs itself when no workflow engine took them (dev mode
// without an Inngest dev server: agents/local-runs.ts), inside workerd with the agent's own SQLite: a
// reminder whose Telegram send fails is not marked undeliverable — the attempt ends, what it did is
// kept (the claim), and the next attempt resumes from there and sends it once; a run after that sends
// nothing; a run planned twice is one schedule. (npm start, a restart and the real schedule:
// tests/node/local-reminders.test.ts.)
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { localEvent } from "../../agents/local-runs";
import { reminderCreated } from "../../agents/workflows/events";
import { createReminder } from "../../db/repositories/reminders";
import { agentFor } from "../../worker/agent-routing";
import { botReplies, failBotApi, newChatId, testDatabase } from "./helpers";
import { converse, personOfChat } from "./telegram-updates";

async function status(userId: string, eventId: string): Promise<string | undefined> {
  const rows = (await testDatabase().withUser(userId, (tx) =>
    tx.execute(sql`select status from events where id = ${eventId}`),
  )) as unknown as Array<{
    status: string;
  }>;
  return rows[0]?.status;
}

describe("deliveries the agent runs itself", () => {
  it("resumes a reminder whose send failed from the kept claim, and sends it once", async () => {
    const chatId = newChatId();
    await converse(chatId, ["/start"]);
    const userId = await personOfChat(chatId);
    const at = new Date(Date.now() - 1_000);
    const eventId = await testDatabase().withUser(userId, (tx) => createReminder(tx, userId, { text: "feed the cat", at, sourceId: null }));
    const event = localEvent(reminderCreated.create({ userId, eventId, at: at.toISOString() }, { id: `reminder-${eventId}` }));
    const agent = await agentFor(env, userId);

    // Telegram down for every try of the sender: the attempt ends after the claim, which is kept.
    await failBotApi({ method: "sendMessage", chatId, times: 4, errorCode: 502 });
    await agent.localRun(event);
    expect(await status(userId, eventId)).toBe("delivering");
    expect((await botReplies(chatId)).filter((t) => t.includes("feed the cat"))).toEqual([]);

    // The next attempt resumes from the claim (claimed again, it would find nothing to send) and sends it.
    await agent.localRun(event);
    expect(await status(userId, eventId)).toBe("delivered");
    // Once more: the run is over and the reminder delivered; nothing is sent again.
    await agent.localRun(event);
    expect((await botReplies(chatId)).filter((t) => t.includes("feed the cat"))).toEqual(["⏰ Reminder: feed the cat"]);
  });

  it("plans a run once however often it is handed over, at its time", async () => {
    const chatId = newChatId();
    await converse(chatId, ["/start"]);
    const userId = await personOfChat(chatId);
    const at = new Date(Date.now() + 3_600_000);
    const eventId = await testDatabase().withUser(userId, (tx) => createReminder(tx, userId, { text: "later", at, sourceId: null }));
    const event = localEvent(reminderCreated.create({ userId, eventId, at: at.toISOString() }, { id: `reminder-${eventId}` }));
    const agent = await agentFor(env, userId);
    await agent.runHere(event);
    await agent.runHere(event);
    const planned = await runInDurableObject(agent, async (instance) =>
      (await instance.listSchedules())
        .filter((s) => s.callback === "localRun")
        .map((s) => ({ id: (s.payload as { id: string }).id, time: s.time })),
    );
    expect(planned).toEqual([{ id: `reminder-${eventId}`, time: Math.floor(at.getTime() / 1000) }]);
  });
});
