// The proactive messages follow the person's clock: a zone set as /timezone and the web app set it
// (resolveTimeZone + setTimezone) moves the morning brief to 08:00 there; the weekly review goes on
// the person's Sunday at 18:xx, claimed per ISO week of their local date, once however often it runs.
// As in briefs.test.ts, fan-outs that would message other files' people run with the listing step
// mocked to this file's people, and the real listing is checked alone (executeStep).
import { InngestTestEngine } from "@inngest/test";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { resolveTimeZone } from "../../../platform/local-time";
import { captureEntity, recordSource } from "../../../db/repositories/memory";
import { setTimezone } from "../../../db/repositories/people";
import { newPerson, runOnce, sentTexts, testDb, testWorkflows } from "./harness";

type Listed = Array<{ userId: string; localDate: string }>;

async function listedAt(fn: "morningBriefCron" | "weeklyReview", now: string, step: string): Promise<Listed> {
  const tick = { name: "inngest/scheduled.timer", data: { cron: "TZ=UTC 0 * * * *" } } as const;
  const { result, error } = await new InngestTestEngine({ function: testWorkflows({ now: new Date(now) }).functions[fn] }).executeStep(
    step,
    {
      events: [tick],
    },
  );
  if (error) throw error;
  return result as Listed;
}

const mine = (listed: Listed, ...people: Array<{ id: string }>) => listed.filter((p) => people.some((person) => person.id === p.userId));

async function capture(userId: string, name: string) {
  await testDb().withUser(userId, async (tx) => {
    const sourceId = await recordSource(tx, userId, {
      kind: "telegram",
      externalId: `msg-${crypto.randomUUID()}`,
      payload: { text: `I read ${name}` },
    });
    await captureEntity(tx, userId, { type: "book", name, embedding: null, sourceId });
  });
}

describe("the morning brief in local time", () => {
  it("goes at 08:00 in the zone the person set; someone who never set one keeps UTC", async () => {
    const moved = await newPerson({ telegram: true });
    const unset = await newPerson({ telegram: true });
    const zone = resolveTimeZone("são paulo");
    expect(zone).toBe("America/Sao_Paulo");
    await setTimezone(testDb(), moved.id, zone!);
    const stored = (await testDb().withUser(moved.id, (tx) => tx.execute(sql`select timezone from users`))) as unknown as Array<{
      timezone: string;
    }>;
    expect(stored).toEqual([{ timezone: "America/Sao_Paulo" }]);

    // 08:00Z: 05:00 in São Paulo, 08:00 for the person still in UTC.
    expect(mine(await listedAt("morningBriefCron", "2026-11-21T08:00:00Z", "people-at-eight"), moved, unset)).toEqual([
      { userId: unset.id, localDate: "2026-11-21" },
    ]);
    // 11:00Z: 08:00 in São Paulo (UTC−3).
    expect(mine(await listedAt("morningBriefCron", "2026-11-21T11:00:00Z", "people-at-eight"), moved, unset)).toEqual([
      { userId: moved.id, localDate: "2026-11-21" },
    ]);
  });
});

describe("the weekly review in local time", () => {
  it("lists people when their own clock shows Sunday 18:xx, with their local date", async () => {
    const kiritimati = await newPerson({ telegram: true, timezone: "Pacific/Kiritimati" }); // UTC+14
    const pagoPago = await newPerson({ telegram: true, timezone: "Pacific/Pago_Pago" }); // UTC−11
    const kolkata = await newPerson({ telegram: true, timezone: "Asia/Kolkata" }); // UTC+5:30
    const berlin = await newPerson({ telegram: true, timezone: "Europe/Berlin" });
    const people = [kiritimati, pagoPago, kolkata, berlin];

    // Sunday 04:00Z is Sunday 18:00 in Kiritimati; Monday 05:00Z is still Sunday 18:00 in Pago Pago.
    expect(mine(await listedAt("weeklyReview", "2026-11-22T04:00:00Z", "people"), ...people)).toEqual([
      { userId: kiritimati.id, localDate: "2026-11-22" },
    ]);
    expect(mine(await listedAt("weeklyReview", "2026-11-23T05:00:00Z", "people"), ...people)).toEqual([
      { userId: pagoPago.id, localDate: "2026-11-22" },
    ]);
    // 13:00Z is 18:30 in Kolkata; 17:00Z is 18:00 in Berlin.
    expect(mine(await listedAt("weeklyReview", "2026-11-22T13:00:00Z", "people"), ...people)).toEqual([
      { userId: kolkata.id, localDate: "2026-11-22" },
    ]);
    expect(mine(await listedAt("weeklyReview", "2026-11-22T17:00:00Z", "people"), ...people)).toEqual([
      { userId: berlin.id, localDate: "2026-11-22" },
    ]);
    // Saturday 17:00Z is 18:00 in Berlin, but not Sunday.
    expect(mine(await listedAt("weeklyReview", "2026-11-21T17:00:00Z", "people"), ...people)).toEqual([]);
  });

  it("claims the week of the person's Sunday, not of UTC's Monday, and sends once across overlapping runs", async () => {
    const pagoPago = await newPerson({ telegram: true, timezone: "Pacific/Pago_Pago" });
    await capture(pagoPago.id, "The Left Hand of Darkness");
    // The real run reads the last 7 days before `now`: a `now` just after this test's writes.
    const now = new Date(Date.now() + 60_000);
    const listed = [{ userId: pagoPago.id, localDate: "2026-11-22" }]; // what "people" lists at Monday 05:00Z
    const run = () =>
      runOnce(
        testWorkflows({ now }).functions.weeklyReview,
        { name: "inngest/scheduled.timer", data: { cron: "TZ=UTC 0 * * * 0,1" } },
        { steps: [{ id: "people", handler: () => listed }] },
      );

    const first = await run();
    expect(first.error).toBeUndefined();
    expect(first.result).toEqual({ people: 1, sent: 1 });
    const again = await run();
    expect(again.result).toEqual({ people: 1, sent: 0 });
    expect(await sentTexts(pagoPago.chatId!)).toEqual([
      "Your week in memory:\n• book: The Left Hand of Darkness\n\nSay /memories to see everything, or /forget to drop something.",
    ]);
    const claims = (await testDb().withUser(pagoPago.id, (tx) =>
      tx.execute(sql`select external_id from sources where kind = 'weekly-review'`),
    )) as unknown as Array<{ external_id: string }>;
    expect(claims).toEqual([{ external_id: "2026-W47" }]);
  });
});
