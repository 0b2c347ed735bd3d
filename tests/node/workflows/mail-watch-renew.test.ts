// mail-watch-renew with @inngest/test: the daily cron and renewWatches against the Gmail stand-in.
// The cron lists every connection in the database (Database.withSystem), and the Postgres and the
// stand-ins are shared with test files running in parallel: a run here must not renew (and so touch
// the tokens and history ids of) other files' connections. So the cron runs on a view of the test
// database whose system listings keep only this file's people; the listing itself is the real query.
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { createWorkflows } from "../../../agents/workflows";
import { RENEW_WITHIN_MS, renewWatches } from "../../../agents/workflows/functions/mail-watch-renew";
import type { Database } from "../../../db/database";
import { saveMailState } from "../../../db/repositories/connections";
import { TokenCipher } from "../../../db/token-cipher";
import {
  connectGmail,
  gmailMailbox,
  gmailRequests,
  newPerson,
  runOnce,
  testConfig,
  testDb,
  tokenSlot,
  TOKEN_KEY,
  testWorkflows,
} from "./harness";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** The watch expiry the Gmail stand-in hands out. */
const WATCH_LIFETIME = 7 * DAY;

/** People created by this file: the only ones the cron may see. */
const mine = new Set<string>();

/** The test database, except that system (cross-person) listings of user ids keep only `mine`. */
const scopedDb: Database = new Proxy(testDb(), {
  get(target, prop) {
    if (prop === "withSystem") {
      return async (work: Parameters<Database["withSystem"]>[0]) => {
        const rows: unknown = await target.withSystem(work);
        return Array.isArray(rows) ? rows.filter((id) => typeof id === "string" && mine.has(id)) : rows;
      };
    }
    const value: unknown = Reflect.get(target, prop, target);
    return typeof value === "function" ? value.bind(target) : value;
  },
});

/** The cron as the Worker builds it, at `now`, on the scoped database (and optionally another config). */
function cron(options: { now?: Date; config?: typeof testConfig } = {}) {
  const { deps } = testWorkflows({ now: options.now });
  return createWorkflows({ ...deps, db: scopedDb, config: options.config ?? deps.config }).functions.mailWatchRenew;
}

const tick = { name: "inngest/scheduled.timer", data: { cron: "TZ=UTC 0 5 * * *" } } as const;

async function person() {
  const p = await newPerson();
  mine.add(p.id);
  return p;
}

function newSub(tag = "watch") {
  return `${tag}-${crypto.randomUUID().slice(0, 8)}`;
}

async function stateOf(userId: string) {
  const rows = (await testDb().withUser(userId, (tx) =>
    tx.execute(
      sql`select gmail_history_id, access_token_enc, (extract(epoch from watch_expires_at) * 1000)::float8 as watch_ms
          from oauth_connections where provider = 'google'`,
    ),
  )) as unknown as Array<{ gmail_history_id: string | null; access_token_enc: string; watch_ms: number | null }>;
  return rows[0]!;
}

async function watchCalls(sub: string) {
  return (await gmailRequests(sub)).filter((r) => r.method === "POST" && r.path === "/watch");
}

function expectAbout(actual: number | null, expected: number, slack = 60_000) {
  expect(actual).not.toBeNull();
  expect(Math.abs(actual! - expected)).toBeLessThan(slack);
}

describe("mail-watch-renew", () => {
  it("renews never-watched and soon-expiring watches, not those with more than 48 h left", async () => {
    const now = Date.now();
    const [never, soon, later] = [await person(), await person(), await person()];
    const [subNever, subSoon, subLater] = [newSub(), newSub(), newSub()];
    await gmailMailbox({ sub: subNever, historyId: 7000 });
    await gmailMailbox({ sub: subSoon, historyId: 7100 });
    await gmailMailbox({ sub: subLater, historyId: 7200 });
    await connectGmail(never.id, subNever);
    // soon: its access token has also expired, so the renewal refreshes it first.
    await connectGmail(soon.id, subSoon, { historyId: "6500", accessExpiresAt: new Date(now - 1000) });
    await connectGmail(later.id, subLater, { historyId: "7150" });
    await testDb().withUser(soon.id, (tx) => saveMailState(tx, { watchExpiresAt: new Date(now + 24 * HOUR) }));
    const laterExpiry = now + 72 * HOUR;
    await testDb().withUser(later.id, (tx) => saveMailState(tx, { watchExpiresAt: new Date(laterExpiry) }));

    const { result, error } = await runOnce(cron({ now: new Date(now) }), tick);
    expect(error).toBeUndefined();
    expect(result).toEqual({ renewed: 2, failed: [] });

    expect(await watchCalls(subNever)).toHaveLength(1);
    expect(await watchCalls(subSoon)).toEqual([expect.objectContaining({ token: `ya29.refreshed-${subSoon}` })]);
    expect(await gmailRequests(subLater)).toEqual([]);

    const neverState = await stateOf(never.id);
    expectAbout(neverState.watch_ms, now + WATCH_LIFETIME);
    // The first watch marks where mail intake starts.
    expect(neverState.gmail_history_id).toBe("7000");
    const soonState = await stateOf(soon.id);
    expectAbout(soonState.watch_ms, now + WATCH_LIFETIME);
    // A renewal never moves a position that is already stored (mail since 6500 is still unread).
    expect(soonState.gmail_history_id).toBe("6500");
    expect(await new TokenCipher(TOKEN_KEY).decrypt(soonState.access_token_enc, tokenSlot(soon.id, "access_token"))).toBe(
      `ya29.refreshed-${subSoon}`,
    );
    const laterState = await stateOf(later.id);
    expect(laterState.watch_ms).toBe(laterExpiry);
    expect(laterState.gmail_history_id).toBe("7150");

    // 30 h on, `later` is within 48 h of expiring; the two just renewed are not.
    const afterwards = await runOnce(cron({ now: new Date(now + 30 * HOUR) }), tick);
    expect(afterwards.result).toEqual({ renewed: 1, failed: [] });
    expect(await watchCalls(subLater)).toHaveLength(1);
    expect(await watchCalls(subNever)).toHaveLength(1);
    expect(await watchCalls(subSoon)).toHaveLength(1);
    const renewedLater = await stateOf(later.id);
    expectAbout(renewedLater.watch_ms, Date.now() + WATCH_LIFETIME, 5 * 60_000);
    expect(renewedLater.gmail_history_id).toBe("7150");
  });

  it("renews a watch due within RENEW_WITHIN_MS (48 h), not one due an hour later", async () => {
    const now = Date.now();
    const [inside, outside] = [await person(), await person()];
    const [subInside, subOutside] = [newSub(), newSub()];
    await gmailMailbox({ sub: subInside, historyId: 50 });
    await gmailMailbox({ sub: subOutside, historyId: 60 });
    await connectGmail(inside.id, subInside, { historyId: "40" });
    await connectGmail(outside.id, subOutside, { historyId: "55" });
    await testDb().withUser(inside.id, (tx) => saveMailState(tx, { watchExpiresAt: new Date(now + RENEW_WITHIN_MS - HOUR) }));
    await testDb().withUser(outside.id, (tx) => saveMailState(tx, { watchExpiresAt: new Date(now + RENEW_WITHIN_MS + HOUR) }));

    const { result } = await runOnce(cron({ now: new Date(now) }), tick);
    expect(result).toEqual({ renewed: 1, failed: [] });
    expect(await watchCalls(subInside)).toHaveLength(1);
    expect(await watchCalls(subOutside)).toHaveLength(0);
    expect((await stateOf(outside.id)).watch_ms).toBe(now + RENEW_WITHIN_MS + HOUR);
  });

  it("keeps renewing the others when one person's renewal fails", async () => {
    const [revoked, noMailbox, ok] = [await person(), await person(), await person()];
    const subRevoked = newSub("watch-revoked");
    const [subNoMailbox, subOk] = [newSub(), newSub()];
    await gmailMailbox({ sub: subRevoked, historyId: 10 });
    await gmailMailbox({ sub: subOk, historyId: 20 });
    // Google refuses the refresh token (the person revoked access).
    await connectGmail(revoked.id, subRevoked, { accessExpiresAt: new Date(Date.now() - 1000) });
    // Gmail refuses the token even after a refresh.
    await connectGmail(noMailbox.id, subNoMailbox);
    await connectGmail(ok.id, subOk);

    const { result, error } = await runOnce<{ renewed: number; failed: unknown[] }>(cron(), tick);
    expect(error).toBeUndefined();
    expect(result.renewed).toBe(1);
    expect(result.failed).toHaveLength(2);
    expect(result.failed).toEqual(
      expect.arrayContaining([
        {
          userId: revoked.id,
          ok: false,
          error: expect.stringMatching(/^NonRetriableError: Google refused the refresh token: invalid_grant/),
        },
        { userId: noMailbox.id, ok: false, error: expect.stringMatching(/^GmailError: Gmail POST \/watch answered 401/) },
      ]),
    );
    expect(await watchCalls(subOk)).toHaveLength(1);
    const okState = await stateOf(ok.id);
    expect(okState.gmail_history_id).toBe("20");
    expectAbout(okState.watch_ms, Date.now() + WATCH_LIFETIME);
    for (const failed of [revoked, noMailbox]) expect(await stateOf(failed.id)).toMatchObject({ gmail_history_id: null, watch_ms: null });
    expect(await watchCalls(subRevoked)).toHaveLength(0);

    // renewWatches (also the CLI's) reports each person in order, including one with no connection.
    const unconnected = await person();
    const results = await renewWatches({ config: testConfig, db: testDb() }, [revoked.id, unconnected.id, ok.id]);
    expect(results).toEqual([
      { userId: revoked.id, ok: false, error: expect.stringMatching(/invalid_grant/) },
      { userId: unconnected.id, ok: false, error: "no Google connection" },
      { userId: ok.id, ok: true, expiresAt: expect.any(String) },
    ]);
    expectAbout(Date.parse(results[2]!.expiresAt!), Date.now() + WATCH_LIFETIME);
    expect(await watchCalls(subOk)).toHaveLength(2);
    expect((await stateOf(ok.id)).gmail_history_id).toBe("20");
  });

  it("fails for good without GMAIL_PUBSUB_TOPIC, watching nothing", async () => {
    const p = await person();
    const sub = newSub();
    await gmailMailbox({ sub, historyId: 30 });
    await connectGmail(p.id, sub);
    const config = { ...testConfig, GMAIL_PUBSUB_TOPIC: undefined };

    const { result, error } = await runOnce(cron({ config }), tick);
    expect(result).toBeUndefined();
    expect(error?.name).toBe("NonRetriableError");
    expect(error?.message).toBe("GMAIL_PUBSUB_TOPIC is not set");

    const direct = await renewWatches({ config, db: testDb() }, [p.id]).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(direct?.name).toBe("NonRetriableError");

    expect(await gmailRequests(sub)).toEqual([]);
    expect(await stateOf(p.id)).toMatchObject({ gmail_history_id: null, watch_ms: null });
  });
});
