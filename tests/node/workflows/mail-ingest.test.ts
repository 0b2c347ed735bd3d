// mail-ingest with @inngest/test: the real function against the Gmail and Google OAuth stand-ins
// (keyed by the Google account "sub"), recording into the test Postgres under RLS. Every test has its
// own person and its own mailbox, so the assertions are on that person's rows only.
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { MAX_MESSAGES_PER_RUN, RESYNC_MESSAGES } from "../../../agents/workflows/functions/mail-ingest";
import { saveMailState } from "../../../db/repositories/connections";
import { TokenCipher } from "../../../db/token-cipher";
import { connectGmail, gmailMailbox, newPerson, runOnce, testDb, tokenSlot, TOKEN_KEY, testWorkflows } from "./harness";
import { connectionOf, gmailPaths, ingestRequests, message, messageId, newSub, notification, rowsOf } from "./mail-fixtures";

const cipher = new TokenCipher(TOKEN_KEY);

describe("mail-ingest", () => {
  it("records each new INBOX message once: a gmail source, a person per sender, an email_received event, and the new position", async () => {
    const person = await newPerson();
    const sub = newSub();
    const old = messageId("old");
    const start = await gmailMailbox({
      sub,
      historyId: 5000,
      messages: [message(old, "Old Sender <old@example.org>", "Before we connected")],
    });
    expect(start).toBe("5001");
    await connectGmail(person.id, sub, { historyId: start });

    const [anna1, bob, anna2] = [messageId("anna1"), messageId("bob"), messageId("anna2")];
    const annaDate = Date.UTC(2025, 2, 14, 9, 30);
    const latest = await gmailMailbox({
      sub,
      messages: [
        message(anna1, '"Anna Schmidt" <Anna@Example.org>', "Lunch on Friday?", {
          snippet: "Are you free on Friday for lunch?",
          internalDate: annaDate,
        }),
        message(bob, "bob@example.org", "Invoice 42"),
        message(anna2, "Anna Schmidt <anna@example.org>", "Re: Lunch on Friday?"),
      ],
    });
    expect(latest).toBe("5004");

    const { result, error } = await runOnce(testWorkflows().functions.mailIngest, notification(person.id, sub, latest));
    expect(error).toBeUndefined();
    expect(result).toEqual({ listed: 3, recorded: 3, resynced: false, historyId: "5004" });

    const rows = await rowsOf(person.id);
    // The message from before the stored position is not read again.
    expect(rows.sources.map((s) => s.external_id).sort()).toEqual([anna1, anna2, bob].sort());
    for (const source of rows.sources) {
      expect(source.kind).toBe("gmail");
      expect(source.user_id).toBe(person.id);
    }
    const annaSource = rows.sources.find((s) => s.external_id === anna1)!;
    expect(annaSource.payload).toMatchObject({
      from: { name: "Anna Schmidt", email: "anna@example.org" },
      subject: "Lunch on Friday?",
      threadId: anna1,
      text: "Email from Anna Schmidt <anna@example.org>: Lunch on Friday?",
    });

    // One person per sender: the display name when there is one, else the address; the address in properties.
    expect(rows.people.map((p) => [p.name, p.properties.email])).toEqual([
      ["Anna Schmidt", "anna@example.org"],
      ["bob@example.org", "bob@example.org"],
    ]);
    const anna = rows.people.find((p) => p.name === "Anna Schmidt")!;
    const bobPerson = rows.people.find((p) => p.name === "bob@example.org")!;

    expect(rows.events).toHaveLength(3);
    const eventOf = (id: string) => rows.events.find((e) => e.payload.messageId === id)!;
    expect(eventOf(anna1).entity_ids).toEqual([anna.id]);
    expect(eventOf(anna2).entity_ids).toEqual([anna.id]);
    expect(eventOf(bob).entity_ids).toEqual([bobPerson.id]);
    expect(eventOf(anna1).payload).toMatchObject({
      subject: "Lunch on Friday?",
      snippet: "Are you free on Friday for lunch?",
      from: { email: "anna@example.org" },
    });
    expect(eventOf(anna1).occurred_ms).toBe(annaDate);
    expect(eventOf(bob).source_id).toBe(rows.sources.find((s) => s.external_id === bob)!.id);

    expect((await connectionOf(person.id))?.gmail_history_id).toBe("5004");

    // history.list from the stored position (INBOX, messageAdded), no resync, metadata only.
    const requests = await ingestRequests(sub);
    const history = requests.filter((r) => r.path.startsWith("/history"));
    expect(history).toHaveLength(1);
    const query = new URLSearchParams(history[0]!.path.split("?")[1]);
    expect(query.get("startHistoryId")).toBe("5001");
    expect(query.get("labelId")).toBe("INBOX");
    expect(query.get("historyTypes")).toBe("messageAdded");
    expect(requests.some((r) => r.path.startsWith("/messages?"))).toBe(false);
    const gets = requests.filter((r) => r.path.startsWith("/messages/"));
    expect(gets.map((r) => r.path.split("?")[0]).sort()).toEqual([anna1, anna2, bob].map((id) => `/messages/${id}`).sort());
    for (const get of gets) expect(new URLSearchParams(get.path.split("?")[1]).get("format")).toBe("metadata");
    expect(requests.every((r) => r.token === `ya29.access-${sub}`)).toBe(true);
  });

  it("reads the sender from every usual form of the From header", async () => {
    const person = await newPerson();
    const sub = newSub();
    await connectGmail(person.id, sub, { historyId: await gmailMailbox({ sub, historyId: 250 }) });
    const senders: Array<[from: string, name: string, email: string]> = [
      ['"Schmidt, Anna" <anna.s@example.org>', "Schmidt, Anna", "anna.s@example.org"],
      ['"Pat \\"PJ\\" O\'Brien" <Pat@Example.org>', 'Pat "PJ" O\'Brien', "pat@example.org"],
      ['"Acme <Deals>" <deals@acme.example>', "Acme <Deals>", "deals@acme.example"],
      ["Carla Diaz<carla@example.org>", "Carla Diaz", "carla@example.org"],
      ["dan@example.org (Dan Old-Style)", "Dan Old-Style", "dan@example.org"],
      ["<eve@example.org>", "eve@example.org", "eve@example.org"],
    ];
    const latest = await gmailMailbox({ sub, messages: senders.map(([from], i) => message(`${sub}-from-${i}`, from, `form ${i}`)) });

    const { result } = await runOnce(testWorkflows().functions.mailIngest, notification(person.id, sub, latest));
    expect(result).toMatchObject({ listed: senders.length, recorded: senders.length });
    const rows = await rowsOf(person.id);
    expect(rows.people.map((p) => [p.name, p.properties.email]).sort()).toEqual(senders.map(([, name, email]) => [name, email]).sort());
    for (const [i, [, name, email]] of senders.entries()) {
      const event = rows.events.find((e) => e.payload.messageId === `${sub}-from-${i}`)!;
      expect(event.payload.from).toEqual({ name: name === email ? null : name, email });
      expect(event.entity_ids).toEqual([rows.people.find((p) => p.name === name)!.id]);
    }
  });

  it("records nothing new when the same notification arrives twice", async () => {
    const person = await newPerson();
    const sub = newSub();
    await connectGmail(person.id, sub, { historyId: await gmailMailbox({ sub, historyId: 200 }) });
    const latest = await gmailMailbox({
      sub,
      messages: [message(messageId("a"), "A <a@example.org>", "one"), message(messageId("b"), "B <b@example.org>", "two")],
    });
    const event = notification(person.id, sub, latest);
    const { mailIngest } = testWorkflows().functions;

    const first = await runOnce(mailIngest, event);
    expect(first.result).toMatchObject({ listed: 2, recorded: 2 });
    const before = await rowsOf(person.id);

    const second = await runOnce(mailIngest, event);
    expect(second.error).toBeUndefined();
    expect(second.result).toEqual({ listed: 0, recorded: 0, resynced: false, historyId: latest });
    expect(await rowsOf(person.id)).toEqual(before);
    expect(before.sources).toHaveLength(2);
    expect(before.events).toHaveLength(2);
    expect((await connectionOf(person.id))?.gmail_history_id).toBe(latest);
  });

  it("records a message once even when its history is read again (a rewound position)", async () => {
    const person = await newPerson();
    const sub = newSub();
    const start = await gmailMailbox({ sub, historyId: 300 });
    await connectGmail(person.id, sub, { historyId: start });
    const ids = [messageId("x"), messageId("y")];
    const latest = await gmailMailbox({ sub, messages: ids.map((id) => message(id, "Xavier <x@example.org>", `about ${id}`)) });
    const { mailIngest } = testWorkflows().functions;
    expect((await runOnce(mailIngest, notification(person.id, sub, latest))).result).toMatchObject({ listed: 2, recorded: 2 });
    const before = await rowsOf(person.id);

    // saveMailState never moves the position back, so rewind it by hand: the same history page again.
    await testDb().withUser(person.id, (tx) =>
      tx.execute(sql`update oauth_connections set gmail_history_id = ${start} where provider = 'google'`),
    );
    const replay = await runOnce(mailIngest, notification(person.id, sub, latest));
    expect(replay.result).toEqual({ listed: 2, recorded: 0, resynced: false, historyId: latest });
    expect(await rowsOf(person.id)).toEqual(before);
    expect(before.people).toHaveLength(1);
    expect((await connectionOf(person.id))?.gmail_history_id).toBe(latest);
  });

  it("never moves the stored position back for a late notification", async () => {
    const person = await newPerson();
    const sub = newSub();
    await connectGmail(person.id, sub, { historyId: await gmailMailbox({ sub, historyId: 400 }) });
    const latest = await gmailMailbox({ sub, messages: [message(messageId("n"), "N <n@example.org>", "new")] });
    const { mailIngest } = testWorkflows().functions;
    expect((await runOnce(mailIngest, notification(person.id, sub, latest))).result).toMatchObject({ recorded: 1, historyId: "401" });

    const late = await runOnce(mailIngest, notification(person.id, sub, "350"));
    expect(late.result).toEqual({ listed: 0, recorded: 0, resynced: false, historyId: "401" });
    expect((await connectionOf(person.id))?.gmail_history_id).toBe("401");
    expect((await rowsOf(person.id)).sources).toHaveLength(1);
  });

  it("stores Gmail's position, not a notification's that history has not caught up with", async () => {
    const person = await newPerson();
    const sub = newSub();
    const start = await gmailMailbox({ sub, historyId: 600 });
    await connectGmail(person.id, sub, { historyId: start });
    const { mailIngest } = testWorkflows().functions;

    // The push names history id 610, but Gmail's history still ends at 600: nothing is listed yet.
    const early = await runOnce(mailIngest, notification(person.id, sub, "610"));
    expect(early.result).toEqual({ listed: 0, recorded: 0, resynced: false, historyId: "600" });
    expect((await connectionOf(person.id))?.gmail_history_id).toBe("600");

    // The mail then shows up in history (ids 601, 602) and is read, not skipped.
    const ids = [messageId("lag1"), messageId("lag2")];
    const latest = await gmailMailbox({ sub, messages: ids.map((id) => message(id, "Lars <lars@example.org>", id)) });
    const later = await runOnce(mailIngest, notification(person.id, sub, latest));
    expect(later.result).toEqual({ listed: 2, recorded: 2, resynced: false, historyId: latest });
    expect((await rowsOf(person.id)).sources.map((s) => s.external_id).sort()).toEqual([...ids].sort());
  });

  it("reads at most MAX_MESSAGES_PER_RUN messages a run and continues from there on the next", async () => {
    const person = await newPerson();
    const sub = newSub();
    const start = await gmailMailbox({ sub, historyId: 10_000 });
    await connectGmail(person.id, sub, { historyId: start });
    const total = MAX_MESSAGES_PER_RUN + 5;
    const ids = Array.from({ length: total }, (_, i) => `bulk-${String(i).padStart(3, "0")}-${sub}`);
    const latest = await gmailMailbox({ sub, messages: ids.map((id) => message(id, "Newsletter <news@example.org>", id)) });
    expect(latest).toBe(String(10_000 + total));
    const { mailIngest } = testWorkflows().functions;

    const first = await runOnce(mailIngest, notification(person.id, sub, latest));
    // The position stops at the last history record read, not at the notification's id.
    expect(first.result).toEqual({
      listed: MAX_MESSAGES_PER_RUN,
      recorded: MAX_MESSAGES_PER_RUN,
      resynced: false,
      historyId: String(10_000 + MAX_MESSAGES_PER_RUN),
    });
    expect((await connectionOf(person.id))?.gmail_history_id).toBe(String(10_000 + MAX_MESSAGES_PER_RUN));

    const second = await runOnce(mailIngest, notification(person.id, sub, latest));
    expect(second.result).toEqual({ listed: 5, recorded: 5, resynced: false, historyId: latest });
    const rows = await rowsOf(person.id);
    expect(rows.sources.map((s) => s.external_id)).toEqual(ids);
    expect(rows.events).toHaveLength(total);
    expect(rows.people).toHaveLength(1);
  });

  it("resyncs the newest mail when the stored history id is too old, then carries on from the notification without resyncing again", async () => {
    const person = await newPerson();
    const sub = newSub();
    const older = Array.from({ length: 5 }, (_, i) => message(`older-${i}-${sub}`, "Old <old@example.org>", `older ${i}`));
    const recent = Array.from({ length: RESYNC_MESSAGES }, (_, i) =>
      message(`recent-${String(i).padStart(2, "0")}-${sub}`, `Sender ${i} <s${i}@example.org>`, `recent ${i}`),
    );
    const latest = await gmailMailbox({ sub, historyId: 9000, oldestHistoryId: 9000, messages: [...older, ...recent] });
    expect(latest).toBe(String(9000 + older.length + recent.length));
    // A position from long ago: Gmail no longer has its history (404).
    await connectGmail(person.id, sub, { historyId: "120" });
    const { mailIngest } = testWorkflows().functions;
    const event = notification(person.id, sub, latest);

    const { result, error } = await runOnce(mailIngest, event);
    expect(error).toBeUndefined();
    // Bounded: only the newest RESYNC_MESSAGES, not the whole mailbox.
    expect(result).toEqual({ listed: RESYNC_MESSAGES, recorded: RESYNC_MESSAGES, resynced: true, historyId: latest });
    expect((await rowsOf(person.id)).sources.map((s) => s.external_id).sort()).toEqual(recent.map((m) => m.id).sort());
    expect((await connectionOf(person.id))?.gmail_history_id).toBe(latest);
    const requests = await ingestRequests(sub);
    expect(
      requests.filter((r) => r.path.startsWith("/history")).map((r) => new URLSearchParams(r.path.split("?")[1]).get("startHistoryId")),
    ).toEqual(["120"]);
    const lists = requests.filter((r) => r.path.startsWith("/messages?"));
    expect(lists).toHaveLength(1);
    expect(new URLSearchParams(lists[0]!.path.split("?")[1]).get("maxResults")).toBe(String(RESYNC_MESSAGES));

    // The same notification again: history from the new position, no second resync, nothing new.
    const again = await runOnce(mailIngest, event);
    expect(again.result).toEqual({ listed: 0, recorded: 0, resynced: false, historyId: latest });
    expect((await ingestRequests(sub)).filter((r) => r.path.startsWith("/messages?"))).toHaveLength(1);

    // New mail afterwards is read through history as usual.
    const fresh = messageId("fresh");
    const next = await gmailMailbox({ sub, messages: [message(fresh, "Fresh <fresh@example.org>", "after the resync")] });
    const after = await runOnce(mailIngest, notification(person.id, sub, next));
    expect(after.result).toEqual({ listed: 1, recorded: 1, resynced: false, historyId: next });
    expect((await ingestRequests(sub)).filter((r) => r.path.startsWith("/messages?"))).toHaveLength(1);
    expect((await rowsOf(person.id)).sources).toHaveLength(RESYNC_MESSAGES + 1);
  });

  it("resyncs when no history id is stored yet, and stores the notification's", async () => {
    const person = await newPerson();
    const sub = newSub();
    await connectGmail(person.id, sub);
    const ids = [messageId("r1"), messageId("r2")];
    const latest = await gmailMailbox({ sub, historyId: 700, messages: ids.map((id) => message(id, "Rita <rita@example.org>", id)) });
    expect((await connectionOf(person.id))?.gmail_history_id).toBeNull();

    const { result } = await runOnce(testWorkflows().functions.mailIngest, notification(person.id, sub, latest));
    expect(result).toEqual({ listed: 2, recorded: 2, resynced: true, historyId: latest });
    expect((await rowsOf(person.id)).sources.map((s) => s.external_id).sort()).toEqual([...ids].sort());
    expect((await connectionOf(person.id))?.gmail_history_id).toBe(latest);
    // Nothing to ask history for: straight to the bounded list.
    expect((await gmailPaths(sub)).filter((p) => !p.startsWith("GET /messages/"))).toEqual(["GET /messages"]);
  });

  it("skips a message deleted between listing and reading it, and records the rest", async () => {
    const person = await newPerson();
    const sub = newSub();
    await connectGmail(person.id, sub, { historyId: await gmailMailbox({ sub, historyId: 750 }) });
    const kept = messageId("kept");
    const latest = await gmailMailbox({ sub, messages: [message(kept, "Kim <kim@example.org>", "still here")] });
    const gone = messageId("gone");
    // The listing (mocked) names a message Gmail no longer has by the time it is read (404).
    const { result, error } = await runOnce(testWorkflows().functions.mailIngest, notification(person.id, sub, latest), {
      steps: [{ id: "list-new-messages", handler: () => ({ messageIds: [gone, kept], historyId: latest, resynced: false }) }],
    });
    expect(error).toBeUndefined();
    expect(result).toEqual({ listed: 2, recorded: 1, resynced: false, historyId: latest });
    expect((await rowsOf(person.id)).sources.map((s) => s.external_id)).toEqual([kept]);
    expect((await gmailPaths(sub)).filter((p) => p.startsWith("GET /messages/"))).toEqual([
      `GET /messages/${gone}`,
      `GET /messages/${kept}`,
    ]);
    expect((await connectionOf(person.id))?.gmail_history_id).toBe(latest);
  });

  it("starts afresh when the person connects a different Google account, and keeps the position for the same one", async () => {
    const person = await newPerson();
    const [oldSub, newSubName] = [newSub(), newSub()];
    // The old mailbox's position is far ahead of anything the new mailbox has.
    await connectGmail(person.id, oldSub, { historyId: "999999" });
    await testDb().withUser(person.id, (tx) => saveMailState(tx, { watchExpiresAt: new Date(Date.now() + 5 * 86_400_000) }));

    // Reconnecting the same account (e.g. after a revoked grant) keeps its position and watch.
    await connectGmail(person.id, oldSub, { refreshToken: null });
    const same = (await connectionOf(person.id))!;
    expect(same).toMatchObject({ gmail_history_id: "999999", watching: true });
    expect(await cipher.decrypt(same.refresh_token_enc!, tokenSlot(person.id, "refresh_token"))).toBe(`1//refresh-${oldSub}`);

    // Another account is another mailbox: no position, no watch, and never the old account's refresh token.
    await connectGmail(person.id, newSubName, { refreshToken: null });
    expect(await connectionOf(person.id)).toMatchObject({ gmail_history_id: null, watching: false, refresh_token_enc: null });
    await connectGmail(person.id, newSubName);
    const ids = [messageId("new1"), messageId("new2")];
    const latest = await gmailMailbox({
      sub: newSubName,
      historyId: 300,
      messages: ids.map((id) => message(id, "Nina <nina@example.org>", id)),
    });

    const { result } = await runOnce(testWorkflows().functions.mailIngest, notification(person.id, newSubName, latest));
    expect(result).toEqual({ listed: 2, recorded: 2, resynced: true, historyId: latest });
    expect((await rowsOf(person.id)).sources.map((s) => s.external_id).sort()).toEqual([...ids].sort());
    expect((await connectionOf(person.id))?.gmail_history_id).toBe(latest);
  });

  it("skips a person without a Google connection", async () => {
    const person = await newPerson();
    const { result, error } = await runOnce(testWorkflows().functions.mailIngest, notification(person.id, newSub(), "123"));
    expect(error).toBeUndefined();
    expect(result).toEqual({ skipped: "no Google connection" });
    expect(await rowsOf(person.id)).toEqual({ sources: [], people: [], events: [] });
    expect(await connectionOf(person.id)).toBeUndefined();
  });

  it("writes a notification's mail only where its own person can see it (RLS)", async () => {
    const [a, b] = [await newPerson(), await newPerson()];
    const [subA, subB] = [newSub(), newSub()];
    const startA = await gmailMailbox({ sub: subA, historyId: 1500 });
    const startB = await gmailMailbox({ sub: subB, historyId: 1600 });
    await connectGmail(a.id, subA, { historyId: startA });
    await connectGmail(b.id, subB, { historyId: startB });
    const ids = [messageId("secret1"), messageId("secret2")];
    // The same sender writes to both, but only A's mailbox is notified.
    const latestA = await gmailMailbox({
      sub: subA,
      messages: ids.map((id) => message(id, "Shared Sender <shared@example.org>", `for A ${id}`)),
    });
    await gmailMailbox({ sub: subB, messages: [message(messageId("b-only"), "Shared Sender <shared@example.org>", "for B")] });

    const { result } = await runOnce(testWorkflows().functions.mailIngest, notification(a.id, subA, latestA));
    expect(result).toMatchObject({ listed: 2, recorded: 2 });

    const rowsA = await rowsOf(a.id);
    expect(rowsA.sources.map((s) => s.external_id).sort()).toEqual([...ids].sort());
    expect(rowsA.people).toHaveLength(1);
    expect(rowsA.events).toHaveLength(2);

    // B sees none of it: not A's sources, not the sender A now knows, not A's events; B's mailbox untouched.
    expect(await rowsOf(b.id)).toEqual({ sources: [], people: [], events: [] });
    const seenByB = await testDb().withUser(b.id, async (tx) => ({
      sources: (await tx.execute(sql`select count(*)::int as n from sources where user_id = ${a.id}`)) as unknown as Array<{ n: number }>,
      entities: (await tx.execute(sql`select count(*)::int as n from entities where id = ${rowsA.people[0]!.id}`)) as unknown as Array<{
        n: number;
      }>,
    }));
    expect(seenByB.sources[0]!.n).toBe(0);
    expect(seenByB.entities[0]!.n).toBe(0);
    expect((await connectionOf(b.id))?.gmail_history_id).toBe(startB);
    expect(await ingestRequests(subB)).toEqual([]);
  });
});
