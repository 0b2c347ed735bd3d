// mail-ingest when Gmail or Google fail: 503s are retried and the retry records each message once, an
// expired or refused access token is refreshed once through Google's token endpoint (and stored
// sealed), and what a retry cannot fix (a refused refresh token, 401 after the refresh, 403) fails the
// run for good without writing anything or moving the position.
import { describe, expect, it } from "vitest";
import { TokenCipher } from "../../../db/token-cipher";
import { connectGmail, gmailMailbox, newPerson, runOnce, tokenSlot, TOKEN_KEY, testWorkflows } from "./harness";
import { connectionOf, ingestRequests, message, messageId, newSub, notification, refreshGrants, rowsOf } from "./mail-fixtures";

const cipher = new TokenCipher(TOKEN_KEY);

describe("mail-ingest when Gmail or Google fail", () => {
  it("lets a 503 while reading a message be retried, and the retry records each message once", async () => {
    const person = await newPerson();
    const sub = newSub();
    await connectGmail(person.id, sub, { historyId: await gmailMailbox({ sub, historyId: 780 }) });
    const ids = [messageId("m1"), messageId("m2")];
    const latest = await gmailMailbox({ sub, messages: ids.map((id) => message(id, "Mo <mo@example.org>", id)) });
    const listed = { messageIds: ids, historyId: latest, resynced: false };
    const { mailIngest } = testWorkflows().functions;
    const event = notification(person.id, sub, latest);

    await gmailMailbox({ sub, fail: { status: 503, times: 1 } });
    const failed = await runOnce(mailIngest, event, { steps: [{ id: "list-new-messages", handler: () => listed }] });
    expect(failed.error?.name).toBe("GmailError");
    expect(failed.error?.message).toMatch(/GET \/messages\/.* answered 503/);
    expect((await rowsOf(person.id)).sources).toEqual([]);
    expect((await connectionOf(person.id))?.gmail_history_id).toBe("780");

    const retried = await runOnce(mailIngest, event, { steps: [{ id: "list-new-messages", handler: () => listed }] });
    expect(retried.result).toEqual({ listed: 2, recorded: 2, resynced: false, historyId: latest });
    const rows = await rowsOf(person.id);
    expect(rows.sources.map((s) => s.external_id).sort()).toEqual([...ids].sort());
    expect(rows.events).toHaveLength(2);
  });

  it("refreshes an expired access token through Google's token endpoint and stores it sealed", async () => {
    const person = await newPerson();
    const sub = newSub();
    await connectGmail(person.id, sub, {
      accessExpiresAt: new Date(Date.now() - 60_000),
      historyId: await gmailMailbox({ sub, historyId: 800 }),
    });
    const id = messageId("t");
    const latest = await gmailMailbox({ sub, messages: [message(id, "Tom <tom@example.org>", "token test")] });
    const before = (await connectionOf(person.id))!;
    expect(await cipher.decrypt(before.access_token_enc, tokenSlot(person.id, "access_token"))).toBe(`ya29.access-${sub}`);

    const { result, error } = await runOnce(testWorkflows().functions.mailIngest, notification(person.id, sub, latest));
    expect(error).toBeUndefined();
    expect(result).toMatchObject({ listed: 1, recorded: 1 });

    const after = (await connectionOf(person.id))!;
    expect(after.access_token_enc).not.toBe(before.access_token_enc);
    expect(after.access_token_enc).not.toContain("ya29");
    expect(await cipher.decrypt(after.access_token_enc, tokenSlot(person.id, "access_token"))).toBe(`ya29.refreshed-${sub}`);
    // Google's expires_in (3599 s) from now.
    expect(after.expires_ms).toBeGreaterThan(Date.now() + 3_000_000);
    expect(after.expires_ms).toBeLessThanOrEqual(Date.now() + 3_600_000);
    expect(after.refresh_token_enc).toBe(before.refresh_token_enc);

    // One refresh, then the new token on every call (the expired one never reached Gmail).
    const grants = await refreshGrants(sub);
    expect(grants).toHaveLength(1);
    const requests = await ingestRequests(sub);
    expect(requests.length).toBeGreaterThanOrEqual(2);
    expect(requests.every((r) => r.token === `ya29.refreshed-${sub}`)).toBe(true);
    expect((await rowsOf(person.id)).sources.map((s) => s.external_id)).toEqual([id]);
  });

  it("refreshes once and retries when Gmail answers 401 to a token that has not expired", async () => {
    const person = await newPerson();
    const sub = newSub();
    await connectGmail(person.id, sub, { historyId: await gmailMailbox({ sub, historyId: 900 }) });
    const id = messageId("u");
    const latest = await gmailMailbox({
      sub,
      messages: [message(id, "Uma <uma@example.org>", "revoked token")],
      rejectTokens: [`ya29.access-${sub}`],
    });

    const { result, error } = await runOnce(testWorkflows().functions.mailIngest, notification(person.id, sub, latest));
    expect(error).toBeUndefined();
    expect(result).toEqual({ listed: 1, recorded: 1, resynced: false, historyId: latest });

    const requests = await ingestRequests(sub);
    expect(requests[0]).toMatchObject({ path: expect.stringMatching(/^\/history\?/), token: `ya29.access-${sub}` });
    expect(requests[1]).toMatchObject({ path: expect.stringMatching(/^\/history\?/), token: `ya29.refreshed-${sub}` });
    // After the refresh (stored, so the next step opens the new token), no call uses the refused one.
    expect(requests.slice(1).every((r) => r.token === `ya29.refreshed-${sub}`)).toBe(true);
    expect(await refreshGrants(sub)).toHaveLength(1);
    expect(await cipher.decrypt((await connectionOf(person.id))!.access_token_enc, tokenSlot(person.id, "access_token"))).toBe(
      `ya29.refreshed-${sub}`,
    );
    expect((await rowsOf(person.id)).sources.map((s) => s.external_id)).toEqual([id]);
  });

  it("fails for good (NonRetriableError) when Google refuses the refresh token, writing nothing", async () => {
    const person = await newPerson();
    const sub = newSub("mail-revoked");
    const start = await gmailMailbox({ sub, historyId: 1100 });
    await connectGmail(person.id, sub, { accessExpiresAt: new Date(Date.now() - 1000), historyId: start });
    const latest = await gmailMailbox({ sub, messages: [message(messageId("v"), "Vera <vera@example.org>", "never read")] });
    const before = (await connectionOf(person.id))!;

    const { result, error } = await runOnce(testWorkflows().functions.mailIngest, notification(person.id, sub, latest));
    expect(result).toBeUndefined();
    expect(error?.name).toBe("NonRetriableError");
    expect(error?.message).toMatch(/refused the refresh token: invalid_grant/);

    expect(await refreshGrants(sub)).toHaveLength(1);
    expect(await ingestRequests(sub)).toEqual([]);
    expect(await connectionOf(person.id)).toEqual(before);
    const rows = await rowsOf(person.id);
    expect(rows).toEqual({ sources: [], people: [], events: [] });
  });

  it("fails for good when Gmail still answers 401 after the refresh", async () => {
    const person = await newPerson();
    const sub = newSub();
    const start = await gmailMailbox({ sub, historyId: 1200 });
    await connectGmail(person.id, sub, { historyId: start });
    const latest = await gmailMailbox({
      sub,
      messages: [message(messageId("w"), "W <w@example.org>", "x")],
      rejectTokens: [`ya29.access-${sub}`, `ya29.refreshed-${sub}`],
    });

    const { error } = await runOnce(testWorkflows().functions.mailIngest, notification(person.id, sub, latest));
    expect(error?.name).toBe("NonRetriableError");
    expect(error?.message).toMatch(/answered 401/);
    // One refresh, one retry: no loop.
    expect((await ingestRequests(sub)).map((r) => r.token)).toEqual([`ya29.access-${sub}`, `ya29.refreshed-${sub}`]);
    expect(await refreshGrants(sub)).toHaveLength(1);
    expect((await rowsOf(person.id)).sources).toEqual([]);
    expect((await connectionOf(person.id))?.gmail_history_id).toBe(start);
  });

  it("lets a transient Gmail failure (503) be retried, and the retry records the mail", async () => {
    const person = await newPerson();
    const sub = newSub();
    const start = await gmailMailbox({ sub, historyId: 1300 });
    await connectGmail(person.id, sub, { historyId: start });
    const id = messageId("z");
    const latest = await gmailMailbox({ sub, messages: [message(id, "Zoe <zoe@example.org>", "flaky")], fail: { status: 503, times: 1 } });
    const { mailIngest } = testWorkflows().functions;
    const event = notification(person.id, sub, latest);

    const failed = await runOnce(mailIngest, event);
    expect(failed.result).toBeUndefined();
    expect(failed.error).toBeDefined();
    expect(failed.error?.name).not.toBe("NonRetriableError");
    expect(failed.error?.name).toBe("GmailError");
    expect(failed.error?.message).toMatch(/answered 503/);
    expect((await rowsOf(person.id)).sources).toEqual([]);
    expect((await connectionOf(person.id))?.gmail_history_id).toBe(start);

    // Inngest's retry of the same event.
    const retried = await runOnce(mailIngest, event);
    expect(retried.result).toEqual({ listed: 1, recorded: 1, resynced: false, historyId: latest });
    expect((await rowsOf(person.id)).sources.map((s) => s.external_id)).toEqual([id]);
  });

  it("fails for good on a Gmail refusal a retry cannot fix (403)", async () => {
    const person = await newPerson();
    const sub = newSub();
    const start = await gmailMailbox({ sub, historyId: 1400 });
    await connectGmail(person.id, sub, { historyId: start });
    const latest = await gmailMailbox({
      sub,
      messages: [message(messageId("f"), "F <f@example.org>", "forbidden")],
      fail: { status: 403, times: 1 },
    });

    const { error } = await runOnce(testWorkflows().functions.mailIngest, notification(person.id, sub, latest));
    expect(error?.name).toBe("NonRetriableError");
    expect(error?.message).toMatch(/answered 403/);
    expect((await rowsOf(person.id)).sources).toEqual([]);
    expect((await connectionOf(person.id))?.gmail_history_id).toBe(start);
  });
});
