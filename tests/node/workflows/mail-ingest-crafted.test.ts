// Guards the mail intake against what a sender controls (issue 12, finding 3): whatever the From and
// Subject headers hold, a message is stored capped and clean, or — if the store still refuses it — is
// logged with its Gmail message id and skipped; the rest of the batch is stored and the position is
// saved, so one email never blocks a person's mail. An outage is still retried, never skipped.
import postgres from "postgres";
import { afterAll, describe, expect, it, vi } from "vitest";
import { inject } from "vitest";
import { connectGmail, gmailMailbox, newPerson, runOnce, testWorkflows } from "./harness";
import { connectionOf, message, messageId, newSub, notification, rowsOf } from "./mail-fixtures";

// The owner's connection, only to make Postgres refuse one chosen message (a trigger keyed by its id).
const owner = postgres(inject("databaseUrl"), { max: 1, onnotice: () => {} });
afterAll(() => owner.end());

/** Makes every insert of Gmail message `id` into sources fail with SQLSTATE `code`; returns the undo. */
async function refuseMessage(id: string, code: string): Promise<() => Promise<void>> {
  const name = `refuse_${id.replace(/[^a-z0-9]/gi, "_")}`;
  await owner.unsafe(`
    create function ${name}() returns trigger language plpgsql as $$
    begin raise exception 'refused for the test' using errcode = '${code}'; end $$;
    create trigger ${name} before insert on sources for each row when (new.external_id = '${id}') execute function ${name}();`);
  return async () => {
    await owner.unsafe(`drop trigger if exists ${name} on sources; drop function if exists ${name}();`);
  };
}

/** Characters Postgres text or a model's single line should never get from a header. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the test looks for control characters on purpose.
const UNCLEAN = /[\u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

describe("finding 3: a crafted email cannot block the mail intake", () => {
  it("stores a 3 kB sender name, a 3 kB address, NUL, control characters and lone surrogates capped and clean, with the rest of the batch", async () => {
    const person = await newPerson();
    const sub = newSub("crafted");
    await connectGmail(person.id, sub, { historyId: await gmailMailbox({ sub, historyId: 2000 }) });
    const ids = {
      before: messageId("before"),
      name: messageId("long-name"),
      address: messageId("long-address"),
      nfkc: messageId("nfkc"),
      after: messageId("after"),
    };
    const latest = await gmailMailbox({
      sub,
      messages: [
        message(ids.before, "Anna <anna@example.org>", "Lunch?"),
        message(
          ids.name,
          `"${"Mallory ".repeat(400)}" <mallory@example.org>`,
          `Hi\u0000 there\u0007\u001b[2J \ud800 ${"Subject ".repeat(400)}`,
          { snippet: `snip\u0000pet ${"x".repeat(1000)}` },
        ),
        message(ids.address, `<${"b".repeat(3000)}@example.org>`, "Address only"),
        // U+FDFA is one character that NFKC turns into eighteen: 200 of them outgrow the name index.
        message(ids.nfkc, `"${"\ufdfa".repeat(200)}" <nfkc@example.org>`, "Expanding name"),
        message(ids.after, "Bob <bob@example.org>", "Invoice"),
      ],
    });

    const { result, error } = await runOnce(testWorkflows().functions.mailIngest, notification(person.id, sub, latest));
    expect(error).toBeUndefined();
    expect(result).toEqual({ listed: 5, recorded: 5, resynced: false, historyId: latest });
    expect((await connectionOf(person.id))?.gmail_history_id).toBe(latest);

    const rows = await rowsOf(person.id);
    expect(rows.sources.map((s) => s.external_id).sort()).toEqual(Object.values(ids).sort());
    expect(rows.events).toHaveLength(5);
    for (const p of rows.people) {
      expect(p.name.length).toBeLessThanOrEqual(200);
      expect(p.name).not.toMatch(UNCLEAN);
    }
    const crafted = rows.sources.find((s) => s.external_id === ids.name)!;
    expect(crafted.payload.from.name).toMatch(/^Mallory Mallory .*…$/);
    expect(crafted.payload.from.name!.length).toBe(200);
    expect(crafted.payload.subject.startsWith("Hi there [2J \ufffd Subject Subject")).toBe(true);
    expect(crafted.payload.subject.length).toBe(200);
    expect(JSON.stringify(crafted.payload)).not.toMatch(UNCLEAN);
    const event = rows.events.find((e) => e.payload.messageId === ids.name)!;
    expect(event.payload.snippet.length).toBeLessThanOrEqual(300);
    expect(event.payload.snippet).not.toMatch(UNCLEAN);
    const addressOnly = rows.sources.find((s) => s.external_id === ids.address)!;
    expect(addressOnly.payload.from.email.length).toBeLessThanOrEqual(254);
    expect(rows.people.map((p) => p.properties.email)).toEqual(
      expect.arrayContaining(["anna@example.org", "mallory@example.org", "nfkc@example.org", "bob@example.org"]),
    );

    // The intake carries on: the next mail is read from the saved position.
    const next = messageId("next");
    const later = await gmailMailbox({ sub, messages: [message(next, "Anna <anna@example.org>", "Re: Lunch?")] });
    expect((await runOnce(testWorkflows().functions.mailIngest, notification(person.id, sub, later))).result).toEqual({
      listed: 1,
      recorded: 1,
      resynced: false,
      historyId: later,
    });
  });

  it("logs a message the store still refuses with its Gmail message id and skips it: the rest of the batch and the position are stored", async () => {
    const person = await newPerson();
    const sub = newSub("refused");
    await connectGmail(person.id, sub, { historyId: await gmailMailbox({ sub, historyId: 3000 }) });
    const [first, refused, last] = [messageId("first"), messageId("refused"), messageId("last")];
    const latest = await gmailMailbox({
      sub,
      messages: [
        message(first, "A <a@example.org>", "one"),
        message(refused, "R <r@example.org>", "two"),
        message(last, "C <c@example.org>", "three"),
      ],
    });
    // 54000: program_limit_exceeded, what an over-long index entry raises — a refusal no retry fixes.
    const undo = await refuseMessage(refused, "54000");
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const { result, error } = await runOnce(testWorkflows().functions.mailIngest, notification(person.id, sub, latest));
      expect(error).toBeUndefined();
      expect(result).toEqual({ listed: 3, recorded: 2, unstorable: [refused], resynced: false, historyId: latest });
      const lines = logged.mock.calls
        .map(([line]) => JSON.parse(String(line)) as Record<string, unknown>)
        .filter((l) => l.messageId === refused);
      expect(lines).toEqual([
        expect.objectContaining({
          level: "error",
          workflow: "mail-ingest",
          userId: person.id,
          messageId: refused,
          error: expect.stringMatching(/refused for the test/),
        }),
      ]);
    } finally {
      logged.mockRestore();
      await undo();
    }
    expect((await rowsOf(person.id)).sources.map((s) => s.external_id).sort()).toEqual([first, last].sort());
    expect((await connectionOf(person.id))?.gmail_history_id).toBe(latest);
  });

  it("never skips a message because Postgres is briefly unavailable: the step fails, the position stays, the retry records it", async () => {
    const person = await newPerson();
    const sub = newSub("outage");
    const start = await gmailMailbox({ sub, historyId: 4000 });
    await connectGmail(person.id, sub, { historyId: start });
    const [ok, unlucky] = [messageId("ok"), messageId("unlucky")];
    const latest = await gmailMailbox({
      sub,
      messages: [message(ok, "O <o@example.org>", "fine"), message(unlucky, "U <u@example.org>", "conflict")],
    });
    const event = notification(person.id, sub, latest);
    // 40001: serialization_failure, the kind of refusal that a retry does fix.
    const undo = await refuseMessage(unlucky, "40001");
    try {
      const failed = await runOnce(testWorkflows().functions.mailIngest, event);
      expect(failed.result).toBeUndefined();
      expect(JSON.stringify(failed.error)).toMatch(/refused for the test/);
      expect((await connectionOf(person.id))?.gmail_history_id).toBe(start);
    } finally {
      await undo();
    }
    // The failed run had stored the message before it (its own transaction); the retry adds the other.
    const retried = await runOnce(testWorkflows().functions.mailIngest, event);
    expect(retried.result).toEqual({ listed: 2, recorded: 1, resynced: false, historyId: latest });
    expect((await rowsOf(person.id)).sources.map((s) => s.external_id).sort()).toEqual([ok, unlucky].sort());
  });
});
