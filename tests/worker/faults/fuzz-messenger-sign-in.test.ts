// Guards the ways a person comes in against bad input, with the fuzzing of fuzz-runner.ts: the
// Telegram webhook (a first message creates its sender) and the sign-in routes (the one-time link, the
// Telegram widget, the Google callback, logout, the development sign-in). Whatever arrives: never a
// 5xx, every error is the JSON shape {error:{code,message,requestId}}, and a refused request writes
// nothing (people in a sentinel Telegram id range, Bot API calls, sessions, the link's token).
// Updates that are valid however odd are answered once each. The two share the sentinel range, which
// is why they run in this one file: the webhook counts the people in the accepted range, the widget's
// signed-in regression case creates one there afterwards.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { WELCOME } from "../../../agents/commands/index";
import { createLoginToken } from "../../../db/repositories/auth";
import { callWithEnv, newPerson, sessionCookie, signInPage, testDatabase } from "../helpers";
import {
  allBotCalls,
  deepArray,
  expectErrorShape,
  fetchWorker,
  footprint,
  Fuzz,
  percentEncode,
  telegramPeople,
  UNICODE_EDGES,
} from "./support";
import { SEED, ORIGIN, type Case, tally, record, run, JSON_TYPE, bodyCases, muteLogsAndTally } from "./fuzz-runner";

/** Sentinel Telegram account ids: refused input must create nobody here; accepted input one person per sender. */
const REFUSED_FROM = 7_700_000_000;
const ACCEPTED_FROM = 7_700_500_000;

muteLogsAndTally();

// -------------------------------------------------------------------------------------------------

describe("POST /api/messenger/webhook", () => {
  it("refuses every malformed update without creating anyone or calling Telegram, and answers every odd but valid one once", async () => {
    const fuzz = new Fuzz(SEED + 1);
    let refusedSender = REFUSED_FROM;
    let acceptedSender = ACCEPTED_FROM;
    let updateId = 900_000_000;
    const update = (sender: number, message: Record<string, unknown> = {}, from: Record<string, unknown> = {}) => ({
      update_id: ++updateId,
      message: {
        message_id: updateId % 100000,
        date: 1_700_000_000,
        chat: { id: sender, type: "private" },
        from: { id: sender, is_bot: false, first_name: "Fuzz", ...from },
        text: "I read Dune",
        ...message,
      },
    });
    const secret = { "x-telegram-bot-api-secret-token": env.TELEGRAM_WEBHOOK_SECRET };

    // Refused (or acknowledged and ignored): nothing may be written for any of these senders.
    const refused = bodyCases(fuzz, "/api/messenger/webhook", secret, update(++refusedSender), 256 * 1024, {
      // Fields the route does not read (grammY ignores them): a wrong type there is still a message.
      skipPaths: ["message.date", "message.chat.type"],
      extraWrong: {
        update_id: [-1, 1.5, 2 ** 60],
        "message.message_id": [-1, 1.5, 2 ** 60],
        "message.chat.id": [1.5, 2 ** 60],
        "message.from.id": [1.5, -(2 ** 60)],
        "message.text": ["x".repeat(20_001)],
      },
    });
    // A fresh sender for each refused case, all in the refused range.
    for (const c of refused) {
      if (typeof c.init.body === "string" && c.init.body.includes(String(REFUSED_FROM + 1))) {
        c.init.body = c.init.body.replaceAll(String(REFUSED_FROM + 1), String(++refusedSender));
      }
    }
    const ignored: Array<[string, unknown]> = [
      ["an edited message", { update_id: ++updateId, edited_message: update(++refusedSender).message }],
      [
        "a callback query",
        {
          update_id: ++updateId,
          callback_query: { id: "1", from: { id: ++refusedSender, is_bot: false, first_name: "\u202e" }, data: "\u0000" },
        },
      ],
      ["a message from a bot", update(++refusedSender, {}, { is_bot: true })],
      ["a message without a sender", { update_id: ++updateId, message: { ...update(++refusedSender).message, from: undefined } }],
      ["only an update id", { update_id: ++updateId }],
      // Anything but chat.type "private" is not a private chat (finding 1): acknowledged, nobody created.
      ["chat.type of the wrong type", update(++refusedSender, { chat: { id: refusedSender, type: [] } })],
    ];
    for (const [label, body] of ignored)
      refused.push({
        label,
        path: "/api/messenger/webhook",
        init: { method: "POST", headers: { ...JSON_TYPE, ...secret }, body: JSON.stringify(body) },
      });
    await run("POST /api/messenger/webhook (refused)", refused, { database: false });

    // Valid however odd: each from its own sender, each must be answered exactly once.
    const accepted: Array<[string, unknown]> = [
      ...UNICODE_EDGES.map((edge): [string, unknown] => [`text ${JSON.stringify(edge)}`, update(++acceptedSender, { text: edge })]),
      ...fuzz
        .some(UNICODE_EDGES, 4)
        .map((edge): [string, unknown] => [
          `first_name ${JSON.stringify(edge)}`,
          update(++acceptedSender, {}, { first_name: edge, last_name: edge }),
        ]),
      ["first_name NUL only", update(++acceptedSender, {}, { first_name: "\u0000" })],
      ["first_name of 50 000 characters", update(++acceptedSender, {}, { first_name: "Ж".repeat(50_000) })],
      ["random unicode text", update(++acceptedSender, { text: fuzz.unicode(300) })],
      ["text at the 20 000 character limit", update(++acceptedSender, { text: "x".repeat(20_000) })],
      ["a caption and no text", update(++acceptedSender, { text: undefined, caption: "🦄\u0000" })],
      [
        "a photo with no text",
        update(++acceptedSender, { text: undefined, photo: [{ file_id: "x", file_unique_id: "y", width: 1, height: 1 }] }),
      ],
      ["date of the wrong type", update(++acceptedSender, { date: "\u0000" })],
      ["a lone surrogate command", update(++acceptedSender, { text: "/forget \ud800" })],
      ["a NUL in /forget (regression: wedged the inbox)", update(++acceptedSender, { text: "/forget a\u0000b" })],
      ["a NUL in /memories", update(++acceptedSender, { text: "/memories bo\u0000ok" })],
    ];
    await run(
      "POST /api/messenger/webhook (accepted)",
      accepted.map(([label, body]) => ({
        label,
        path: "/api/messenger/webhook",
        init: { method: "POST", headers: { ...JSON_TYPE, ...secret }, body: JSON.stringify(body) },
      })),
      { each: async (c, response) => expect(response.status, c.label).toBe(200) },
    );

    expect(await telegramPeople(REFUSED_FROM, ACCEPTED_FROM - 1)).toEqual([]);
    const isSentinel = (id: number | undefined) => id !== undefined && id >= REFUSED_FROM && id < ACCEPTED_FROM + 1_000_000;
    const deadline = Date.now() + 15_000;
    let sent: Map<number, string[]>;
    for (;;) {
      sent = new Map();
      for (const call of (await allBotCalls()).filter((c) => c.method === "sendMessage" && isSentinel(c.payload.chat_id))) {
        sent.set(call.payload.chat_id!, [...(sent.get(call.payload.chat_id!) ?? []), call.view?.text ?? String(call.payload.text)]);
      }
      if (sent.size >= accepted.length || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await new Promise((resolve) => setTimeout(resolve, 200)); // a duplicate would arrive now
    const chats = [...sent.keys()];
    expect(
      chats.filter((id) => id < ACCEPTED_FROM),
      "Bot API calls to refused senders",
    ).toEqual([]);
    expect(chats.sort(), "one chat per accepted update").toHaveLength(accepted.length);
    for (const [chat, texts] of sent) {
      expect(texts, `replies to ${chat}`).toHaveLength(1);
      expect(texts[0]!.startsWith(WELCOME), `replies to ${chat}`).toBe(true);
    }
    const people = await telegramPeople(ACCEPTED_FROM, ACCEPTED_FROM + 999_999);
    expect(people).toHaveLength(accepted.length);
    expect(people.some((p) => p.display_name.includes("\u0000"))).toBe(false);
  });
});

describe("sign-in routes", () => {
  it("POST /auth/link/:token refuses every unknown or malformed token, spends nothing and starts no session", async () => {
    const fuzz = new Fuzz(SEED + 8);
    const person = await newPerson("fuzz-link");
    const token = await createLoginToken(testDatabase(), person.id, 600);
    const tokens = [
      ...UNICODE_EDGES.map((edge) => percentEncode(edge)),
      ...Array.from({ length: 8 }, () => fuzz.percentBytes(fuzz.int(1, 64))),
      ...Array.from({ length: 4 }, () => percentEncode(fuzz.ascii(fuzz.int(1, 80)))),
      `${token}x`,
      token.slice(0, -1),
      token.toUpperCase(),
      `${token}%00`,
      "x".repeat(100_000),
    ];
    // Sent as the link's page would (its nonce and cookie), so that the token itself is what is refused.
    const page = await signInPage(`/auth/link/${token}`);
    const fromPage = () => ({ origin: ORIGIN, "content-type": "application/x-www-form-urlencoded", cookie: page.cookie });
    const cases: Case[] = tokens.map((t) => ({
      label: `token ${t.slice(0, 50)}`,
      path: `/auth/link/${t}`,
      init: { method: "POST", headers: fromPage(), body: `nonce=${page.nonce}` },
    }));
    for (const origin of ["https://evil.example", "null", `x${fuzz.ascii(30)}`])
      cases.push({
        label: `the real token from origin ${origin}`,
        path: `/auth/link/${token}`,
        init: { method: "POST", headers: { origin } },
      });
    for (let i = 0; i < 4; i++)
      cases.push({
        label: `random body #${i}`,
        path: `/auth/link/${fuzz.ascii(20).replace(/\W/g, "")}x`,
        init: { method: "POST", headers: { ...fromPage(), ...JSON_TYPE }, body: fuzz.bytes(2000) },
      });
    await run("POST /auth/link/:token", cases, {
      each: async (c, response) => {
        expect([400, 403, 404, 405], c.label).toContain(response.status);
        expect(response.headers.get("set-cookie"), c.label).toBeNull();
      },
    });
    expect(await footprint(person.id)).toMatchObject({ sessions: 0, open_login_tokens: 1 });
  });

  it("GET /auth/telegram refuses every unsigned, mis-signed or malformed widget login", async () => {
    const fuzz = new Fuzz(SEED + 9);
    const sign = async (fields: Record<string, string>) => {
      const dataCheckString = Object.keys(fields)
        .sort()
        .map((k) => `${k}=${fields[k]}`)
        .join("\n");
      const secret = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(env.TELEGRAM_BOT_TOKEN));
      const key = await crypto.subtle.importKey("raw", secret, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
      const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(dataCheckString)));
      return new URLSearchParams({ ...fields, hash: [...mac].map((b) => b.toString(16).padStart(2, "0")).join("") }).toString();
    };
    const now = () => String(Math.floor(Date.now() / 1000));
    let sender = REFUSED_FROM + 500_000 - 1000;
    const base = () => ({ id: String(++sender), first_name: "Fuzz", auth_date: now() });
    const queries: string[] = [];
    for (let i = 0; i < 8; i++) queries.push(fuzz.percentBytes(fuzz.int(1, 80)));
    for (let i = 0; i < 4; i++) queries.push(new URLSearchParams({ ...base(), hash: fuzz.ascii(64) }).toString());
    for (const field of ["id", "first_name", "last_name", "username", "photo_url", "auth_date", "hash"]) {
      for (const value of fuzz.some(
        ["", "abc", "-1", "0", "1.5", "1e400", "0x10", "9".repeat(30), "\u0000", "\ud800", "🦄", "x".repeat(5000), "javascript:alert(1)"],
        3,
      )) {
        queries.push(new URLSearchParams({ ...base(), hash: "a".repeat(64), [field]: value }).toString());
      }
    }
    // Signed by the right bot but wrong: a field that is not a number, stale, from the future, tampered.
    queries.push(await sign({ ...base(), id: "abc" }));
    queries.push(await sign({ ...base(), id: "-5" }));
    queries.push(await sign({ ...base(), auth_date: String(Math.floor(Date.now() / 1000) - 3600) }));
    queries.push(await sign({ ...base(), auth_date: String(Math.floor(Date.now() / 1000) + 3600) }));
    queries.push((await sign({ ...base(), first_name: "Mallory" })).replace("Mallory", "Alice"));
    queries.push(`hash=${"0".repeat(64)}&${await sign(base())}`);
    queries.push(`${await sign(base())}&extra=1`);
    queries.push("", "hash=", `id=${REFUSED_FROM + 499_000}&hash=${"f".repeat(64)}&auth_date=${now()}`);
    // Each comes back to the browser that loaded /login (its nonce and cookie), so what is fuzzed is the
    // widget data itself; without them every one is a 403 (tests/worker/sign-in.test.ts, finding 5).
    const browser = await signInPage();
    await run(
      "GET /auth/telegram",
      queries.map((query) => ({
        label: query.slice(0, 70),
        path: `/auth/telegram?nonce=${browser.nonce}&${query}`,
        init: { headers: { cookie: browser.cookie } },
      })),
      {
        database: false,
        each: async (c, response) => {
          expect([400, 401], c.label).toContain(response.status);
          expect(
            response.headers.getSetCookie().filter((cookie) => cookie.startsWith("__Host-soma_session=")),
            c.label,
          ).toEqual([]);
        },
      },
    );
    expect(await telegramPeople(REFUSED_FROM, ACCEPTED_FROM - 1)).toEqual([]);

    // Correctly signed with a NUL in the name (regression: a 500 from Postgres): signs in.
    const id = ACCEPTED_FROM + 900_000;
    const response = await fetchWorker(
      `/auth/telegram?nonce=${browser.nonce}&${await sign({ id: String(id), first_name: "Nu\u0000ll", last_name: "\ud800", auth_date: now() })}`,
      { headers: { cookie: browser.cookie } },
    );
    tally.set("GET /auth/telegram", (tally.get("GET /auth/telegram") ?? 0) + 1);
    record("GET /auth/telegram", response.status);
    expect(response.status).toBe(303);
    expect(response.headers.getSetCookie().some((cookie) => cookie.startsWith("__Host-soma_session="))).toBe(true);
    const [created] = await telegramPeople(id, id);
    expect(created?.display_name).toBe("Null \ufffd");
  });

  it("GET /auth/google/callback refuses every forged, mismatched or malformed callback and signs nobody in", async () => {
    const fuzz = new Fuzz(SEED + 10);
    const flow = (value: unknown) => `soma_google_flow=${percentEncode(typeof value === "string" ? value : JSON.stringify(value))}`;
    const state = "fuzz-state-0123456789";
    const good = { state, verifier: "v".repeat(43), intent: "signin" };
    const cases: Case[] = [];
    const callback = (label: string, query: string, cookie?: string): Case => ({
      label,
      path: `/auth/google/callback?${query}`,
      init: { headers: cookie ? { cookie } : {} },
    });
    for (let i = 0; i < 6; i++) cases.push(callback(`random query #${i}`, fuzz.percentBytes(fuzz.int(1, 60))));
    for (let i = 0; i < 4; i++)
      cases.push(callback(`random cookie #${i}`, `state=${state}&code=abc`, `soma_google_flow=${percentEncode(fuzz.unicode(40))}`));
    for (const shape of [
      null,
      [],
      {},
      { state },
      { ...good, intent: "admin" },
      { ...good, state: 1 },
      "{",
      deepArray(5000),
      `"${"\\ud800"}"`,
    ]) {
      cases.push(callback(`flow cookie ${JSON.stringify(shape)?.slice(0, 30)}`, `state=${state}&code=abc`, flow(shape)));
    }
    for (const given of [
      "",
      "x",
      state.slice(0, -1),
      `${state}x`,
      state.toUpperCase(),
      percentEncode("\u0000"),
      percentEncode("\ud800"),
      "x".repeat(10_000),
    ]) {
      cases.push(callback(`state ${given.slice(0, 20)}`, `state=${given}&code=abc`, flow(good)));
    }
    cases.push(callback("no state", "code=abc", flow(good)));
    cases.push(callback("no code", `state=${state}`, flow(good)));
    cases.push(callback("Google's error redirect", `state=${state}&error=access_denied`, flow(good)));
    cases.push(callback("two states", `state=x&state=${state}&code=abc`, flow(good)));
    // The state matches, the code is garbage: Google (the stand-in) refuses it.
    for (const code of [...fuzz.some(UNICODE_EDGES, 4), fuzz.ascii(30), "x".repeat(20_000), "bad-code"]) {
      cases.push(callback(`code ${JSON.stringify(code).slice(0, 20)}`, `state=${state}&code=${percentEncode(code)}`, flow(good)));
      cases.push(
        callback(
          `connect, code ${JSON.stringify(code).slice(0, 20)}`,
          `state=${state}&code=${percentEncode(code)}`,
          flow({ ...good, intent: "connect" }),
        ),
      );
    }
    await run("GET /auth/google/callback", cases, {
      database: false,
      each: async (c, response) => {
        expect([302, 400, 401], c.label).toContain(response.status);
        if (response.status === 302) expect(response.headers.get("location"), c.label).toBe("/login");
        expect(response.headers.get("set-cookie") ?? "", c.label).not.toMatch(/__Host-soma_session=/);
      },
    });
  });

  it("POST /logout never fails and never ends another session", async () => {
    const fuzz = new Fuzz(SEED + 11);
    const victim = await newPerson("fuzz-logout");
    const victimCookie = await sessionCookie(victim);
    const cases: Case[] = [];
    for (let i = 0; i < 8; i++)
      cases.push({
        label: `random cookie #${i}`,
        path: "/logout",
        init: {
          method: "POST",
          headers: { origin: ORIGIN, cookie: `__Host-soma_session=${percentEncode(fuzz.unicode(fuzz.int(1, 60)))}` },
        },
      });
    for (let i = 0; i < 4; i++)
      cases.push({
        label: `random body #${i}`,
        path: "/logout",
        init: { method: "POST", headers: { origin: ORIGIN, ...JSON_TYPE }, body: fuzz.bytes(fuzz.int(0, 70_000)) },
      });
    for (const origin of ["https://evil.example", "null", `x${fuzz.ascii(20)}`, "http://soma.test"]) {
      cases.push({
        label: `the victim's cookie from ${origin}`,
        path: "/logout",
        init: { method: "POST", headers: { origin, cookie: victimCookie } },
      });
    }
    cases.push({
      label: "the victim's cookie, sec-fetch-site cross-site",
      path: "/logout",
      init: { method: "POST", headers: { "sec-fetch-site": "cross-site", cookie: victimCookie } },
    });
    cases.push({ label: "no cookie", path: "/logout", init: { method: "POST", headers: { origin: ORIGIN } } });
    cases.push({
      label: "a huge cookie",
      path: "/logout",
      init: { method: "POST", headers: { origin: ORIGIN, cookie: `__Host-soma_session=${"z".repeat(50_000)}` } },
    });
    await run("POST /logout", cases, { each: async (c, response) => expect([303, 403], c.label).toContain(response.status) });
    expect((await fetchWorker("/api/me", { headers: { cookie: victimCookie } })).status).toBe(200);
  });

  it("POST /auth/dev refuses outside development and cross-site in development, starting no session", async () => {
    const fuzz = new Fuzz(SEED + 12);
    const cases: Case[] = [];
    for (let i = 0; i < 6; i++)
      cases.push({
        label: `random body #${i}`,
        path: "/auth/dev",
        init: { method: "POST", headers: { origin: ORIGIN, ...JSON_TYPE }, body: fuzz.bytes(fuzz.int(0, 5000)) },
      });
    for (const edge of UNICODE_EDGES.slice(0, 4))
      cases.push({
        label: `unicode body ${JSON.stringify(edge)}`,
        path: "/auth/dev",
        init: { method: "POST", headers: { origin: ORIGIN, ...JSON_TYPE }, body: JSON.stringify({ email: edge }) },
      });
    for (const origin of ["https://evil.example", "null", `x${fuzz.ascii(20)}`])
      cases.push({ label: `origin ${origin}`, path: "/auth/dev", init: { method: "POST", headers: { origin } } });
    await run("POST /auth/dev (test environment)", cases, {
      database: false,
      each: async (c, response) => {
        expect([403, 404], c.label).toContain(response.status);
        expect(response.headers.get("set-cookie"), c.label).toBeNull();
      },
    });

    const crossSite = [
      ...[
        "https://evil.example",
        "null",
        "http://soma.test",
        "https://soma.test.evil.example",
        ...Array.from({ length: 6 }, () => `x${fuzz.ascii(fuzz.int(1, 60))}`),
      ].map((origin) => ({ origin })),
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site" },
    ];
    tally.set("POST /auth/dev (development)", crossSite.length);
    for (const headers of crossSite) {
      const response = await callWithEnv({ ENVIRONMENT: "development" }, "/auth/dev", {
        method: "POST",
        headers: { ...headers, ...JSON_TYPE },
        body: String.fromCharCode(...fuzz.bytes(100)),
      });
      record("POST /auth/dev (development)", response.status);
      expect(response.status, JSON.stringify(headers)).toBe(403);
      expect(response.headers.get("set-cookie")).toBeNull();
      await expectErrorShape(response, JSON.stringify(headers));
    }
  });
});
