// `npm run mail:watch` (ops/mail-watch.ts) against the test Postgres and the Gmail stand-in: every
// connected mailbox gets a watch; the command names what it needs when something is missing.
import { sql } from "drizzle-orm";
import { describe, expect, inject, it } from "vitest";
import { mailWatch } from "../../ops/mail-watch";
import { connectGmail, gmailMailbox, gmailRequests, newPerson, testDb, testSettings } from "./workflows/harness";

const environment = { ...testSettings, DATABASE_URL: inject("databaseUrl") };

describe("npm run mail:watch", () => {
  it("watches every connected mailbox and stores the expiry and the starting history id", async () => {
    const person = await newPerson();
    const sub = `watch-cmd-${crypto.randomUUID().slice(0, 8)}`;
    const historyId = await gmailMailbox({ sub, historyId: 4242 });
    await connectGmail(person.id, sub);
    const lines: string[] = [];
    // Only this test's mailbox: the suite's Postgres is shared with other files' connections.
    const results = await mailWatch(environment, (line) => lines.push(line), [`${sub}@gmail.example`]);
    expect(results.map((r) => r.userId)).toEqual([person.id]);
    expect(results.find((r) => r.userId === person.id)).toMatchObject({ ok: true, expiresAt: expect.any(String) });
    expect(lines.some((l) => l.includes(person.id) && l.includes("watching until"))).toBe(true);
    const watch = (await gmailRequests(sub)).find((r) => r.path === "/watch");
    expect(watch?.method).toBe("POST");
    const [row] = (await testDb().withUser(person.id, (tx) =>
      tx.execute(sql`select gmail_history_id, watch_expires_at from oauth_connections`),
    )) as unknown as Array<{ gmail_history_id: string; watch_expires_at: Date }>;
    expect(row?.gmail_history_id).toBe(historyId);
    expect(new Date(row!.watch_expires_at).getTime()).toBeGreaterThan(Date.now() + 6 * 86_400_000);
    // No token value is ever printed.
    expect(lines.join("\n")).not.toMatch(/ya29\.|1\/\/refresh/);
  });

  it("names the missing setting", async () => {
    await expect(mailWatch({ ...environment, GMAIL_PUBSUB_TOPIC: "" }, () => {})).rejects.toThrow(/GMAIL_PUBSUB_TOPIC/);
    await expect(mailWatch({ ...environment, DATABASE_URL: "" }, () => {})).rejects.toThrow(/DATABASE_URL/);
  });
});
