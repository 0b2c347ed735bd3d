import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { createReminder } from "../../../db/repositories/memory";
import { newPerson, runOnce, sentTexts, testDb, testWorkflows } from "./harness";

describe("probe", () => {
  it("sleepUntil", async () => {
    const person = await newPerson({ telegram: true });
    const at = new Date(Date.now() + 3_600_000);
    const eventId = await testDb().withUser(person.id, (tx) => createReminder(tx, person.id, { text: "call mum", at, sourceId: null }));
    const { functions } = testWorkflows();
    const out = await runOnce(functions.reminderDeliver, { name: "schedule/reminder.created", data: { userId: person.id, eventId, at: at.toISOString() } }, { steps: [{ id: "wait-until-due", handler: () => null }] });
    console.log(out.result, out.error, Object.keys(out.state));
    console.log(await sentTexts(person.chatId!));
  }, 15000);
});
