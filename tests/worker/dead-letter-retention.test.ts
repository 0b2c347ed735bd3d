// Dead letters are kept no longer than their retention, whether or not an operator ever lists them: a
// write prunes what is older, and an alarm (armed while anything is kept) prunes the rest. Each test
// uses its own DeadLetters object (the Worker's is "main"), so nothing here touches another file's letters.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DEAD_LETTER_RETENTION_MS, DeadLetters } from "../../agents/dead-letters";

const DAY = 86_400_000;

function ownLetters() {
  return env.DeadLetters.get(env.DeadLetters.idFromName(`retention-${crypto.randomUUID()}`));
}

function letter(key: string) {
  return { key, personId: null, senderId: 4242, updateId: 1, chatId: 4242, text: "words", error: "TypeError: test" };
}

/** Dates a kept letter `ageMs` back, as if it had been written then. */
function age(stub: DurableObjectStub<DeadLetters>, key: string, ageMs: number) {
  return runInDurableObject(stub, (_instance, state) => {
    state.storage.sql.exec(`update letters set first_at = ?, last_at = ? where key = ?`, Date.now() - ageMs, Date.now() - ageMs, key);
  });
}

function keys(stub: DurableObjectStub<DeadLetters>): Promise<string[]> {
  return runInDurableObject(stub, (_instance, state) =>
    state.storage.sql
      .exec<{ key: string }>(`select key from letters order by key`)
      .toArray()
      .map((r) => r.key),
  );
}

describe("dead letter retention", () => {
  it("a write prunes letters and failed-store counters older than the retention", async () => {
    const stub = ownLetters();
    await stub.failedToStore(letter("webhook:1")); // a counter, not yet dead
    await stub.add({ ...letter("inbox:1"), attempts: 3 });
    await age(stub, "webhook:1", DEAD_LETTER_RETENTION_MS + DAY);
    await age(stub, "inbox:1", DEAD_LETTER_RETENTION_MS + DAY);
    await stub.add({ ...letter("inbox:2"), attempts: 3 });
    expect(await keys(stub)).toEqual(["inbox:2"]);
  });

  it("an alarm prunes them without any write or listing, and stays armed only while something is kept", async () => {
    const stub = ownLetters();
    await stub.add({ ...letter("inbox:old"), attempts: 3 });
    await stub.add({ ...letter("inbox:recent"), attempts: 3 });
    const armed = await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
    expect(armed).not.toBeNull();
    expect(armed!).toBeLessThanOrEqual(Date.now() + DAY + 1000);

    await age(stub, "inbox:old", DEAD_LETTER_RETENTION_MS + DAY);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await keys(stub)).toEqual(["inbox:recent"]);
    expect(await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm())).not.toBeNull();

    await age(stub, "inbox:recent", DEAD_LETTER_RETENTION_MS + DAY);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await keys(stub)).toEqual([]);
    expect(await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm())).toBeNull();
  });

  it("forgets a person's letters by their id and by their Telegram id (account deletion)", async () => {
    const stub = ownLetters();
    const personId = crypto.randomUUID();
    await stub.add({ ...letter("inbox:theirs"), personId, senderId: 7001, chatId: 7001, attempts: 3 });
    await stub.failedToStore({ ...letter("webhook:theirs"), senderId: 7001, chatId: 7001 });
    await stub.failedToStore({ ...letter("webhook:someone-else"), senderId: 7002, chatId: 7002 });
    await stub.forgetPerson(personId, 7001);
    expect(await keys(stub)).toEqual(["webhook:someone-else"]);
  });

  it("an object whose letters predate the sender column gets it, and finds their letters by their private chat", async () => {
    const stub = ownLetters();
    await runInDurableObject(stub, (_instance, state) => {
      // The table as it was before letters knew their sender, with one webhook letter in it.
      state.storage.sql.exec(`drop table letters`);
      state.storage.sql.exec(`create table letters (key text primary key, origin text not null, person_id text, update_id integer,
        chat_id integer, text text not null default '', error text not null, attempts integer not null, first_at integer not null,
        last_at integer not null, dead integer not null default 0)`);
      state.storage.sql.exec(
        `insert into letters (key, origin, chat_id, text, error, attempts, first_at, last_at, dead) values ('webhook:old', 'webhook', 7003, 'words', 'x', 3, ?, ?, 1)`,
        Date.now(),
        Date.now(),
      );
      const upgraded = new DeadLetters(state, env);
      expect(upgraded.list(10)).toMatchObject([{ key: "webhook:old", senderId: null, chatId: 7003 }]);
      upgraded.forgetPerson(crypto.randomUUID(), 7003);
      expect(upgraded.list(10)).toEqual([]);
    });
  });
});
