// Guards the rest of the public endpoints against bad input, with the fuzzing of fuzz-runner.ts: the
// mail push (right token, valid OIDC token), the signed-in web API (chat, memories, account deletion),
// the Inngest endpoint (GET/POST, and PUT, the sync) and unknown paths. Whatever arrives: never a 5xx,
// every error is the JSON shape {error:{code,message,requestId}} (the Inngest SDK's own refusals
// aside), and a refused request writes nothing (the person's rows, Inngest events, no sync reached).
// Inputs that are valid however odd are answered once each (one event per odd message id, one reply
// per odd chat message).
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import type { Person } from "../../../db/repositories/auth";
import { callWithEnv, newPerson, readChatStream, sessionCookie, testDatabase } from "../helpers";
import {
  base64,
  connectMailbox,
  envelope,
  expectErrorShape,
  fetchWorker,
  footprint,
  Fuzz,
  inngestEvents,
  percentEncode,
  pushToken,
  streamedBody,
  UNICODE_EDGES,
} from "./support";
import { SEED, ORIGIN, type Case, tally, record, run, JSON_TYPE, bodyCases, muteLogsAndTally } from "./fuzz-runner";

muteLogsAndTally();

// -------------------------------------------------------------------------------------------------

describe("POST /api/webhooks/mail", () => {
  it("refuses or acknowledges every malformed push (right token, valid OIDC token) and sends no event", async () => {
    const fuzz = new Fuzz(SEED + 2);
    const { userId, email } = await connectMailbox("mail-fuzz");
    const bearer = await pushToken();
    const headers = { authorization: `Bearer ${bearer}` };
    const path = `/api/webhooks/mail?token=${percentEncode(env.MAIL_PUSH_TOKEN)}`;
    const valid = envelope({ emailAddress: email, historyId: "4242" }, "fuzz-valid-template");
    const cases = bodyCases(fuzz, path, headers, valid, 64 * 1024, {
      // The one field whose value decides: keep it broken below, never the valid template.
      skipPaths: ["message.data"],
      extraWrong: { "message.messageId": ["", "x".repeat(201)], subscription: ["x".repeat(501)] },
    });
    // Every case above carries the valid template's message id; none may become an event.
    const badData: Array<[string, unknown]> = [
      ["data that is not base64", "%%%\u0000"],
      ["base64 of random bytes", btoa(String.fromCharCode(...fuzz.bytes(64)))],
      ["base64 of truncated JSON", base64(JSON.stringify({ emailAddress: email, historyId: "1" }).slice(0, 20))],
      ["a lone surrogate in the address", { emailAddress: `\ud800${email}`, historyId: "1" }],
      ["an RTL mark in the address", { emailAddress: `\u202e${email}`, historyId: "1" }],
      ["a NUL in the address", { emailAddress: `${email}\u0000`, historyId: "1" }],
      ["Arabic-Indic digits as history id", { emailAddress: email, historyId: "١٢٣" }],
      ["a negative history id", { emailAddress: email, historyId: -5 }],
      ["a fractional history id", { emailAddress: email, historyId: 1.5 }],
      ["a history id of 21 digits", { emailAddress: email, historyId: "1".repeat(21) }],
      ["an emoji history id", { emailAddress: email, historyId: "🦄" }],
      ["a nested notification", { emailAddress: { email }, historyId: "1" }],
      ["no address", { historyId: "1" }],
      ["JSON null", null],
    ];
    for (const [label, data] of badData) {
      const body = envelope(data === null ? base64("null") : data, `fuzz-bad-${fuzz.int(0, 1e9)}-\ud800`);
      cases.push({
        label: `data: ${label}`,
        path,
        init: { method: "POST", headers: { ...headers, ...JSON_TYPE }, body: JSON.stringify(body) },
      });
    }
    await run("POST /api/webhooks/mail", cases, {
      database: false, // refused, or acknowledged without looking for the mailbox
      each: async (c, response) => expect([204, 400, 413, 415], c.label).toContain(response.status),
    });
    expect((await inngestEvents("mail/notification.received")).filter((e) => e.data.userId === userId)).toEqual([]);

    // Odd but valid message ids: exactly one event each.
    const odd = ["🦄-1", "\u202e-2", "e\u0301\u0301-3", "x".repeat(200)];
    await run(
      "POST /api/webhooks/mail (accepted)",
      odd.map((messageId) => ({
        label: `message id ${JSON.stringify(messageId).slice(0, 30)}`,
        path,
        init: {
          method: "POST",
          headers: { ...headers, ...JSON_TYPE },
          body: JSON.stringify(envelope({ emailAddress: email, historyId: "77" }, messageId)),
        },
      })),
      { each: async (c, response) => expect(response.status, c.label).toBe(204) },
    );
    const events = (await inngestEvents("mail/notification.received")).filter((e) => e.data.userId === userId);
    expect(events.map((e) => e.id).sort()).toEqual(odd.map((id) => `gmail-push-${id}`).sort());
    expect(events.every((e) => e.deliveries === 1)).toBe(true);
  });
});

describe("the web API, signed in", () => {
  let person: Person;
  let cookie: string;
  let entityId: string;
  let before: Record<string, number>;

  beforeAll(async () => {
    person = await newPerson("fuzz-web");
    cookie = await sessionCookie(person);
    const [row] = (await testDatabase().withUser(person.id, (tx) =>
      tx.execute(
        sql`insert into entities (user_id, type, name, normalized_name) values (${person.id}, 'book', 'Dune', 'dune') returning id`,
      ),
    )) as unknown as Array<{ id: string }>;
    entityId = row!.id;
    before = await footprint(person.id);
  });

  it("POST /api/chat refuses every malformed body and writes nothing", async () => {
    const fuzz = new Fuzz(SEED + 3);
    const cases = bodyCases(fuzz, "/api/chat", { cookie, origin: ORIGIN }, { message: "I read Solaris" }, 64 * 1024, {
      extraWrong: { message: ["", "   \n\t ", "x".repeat(8001)] },
      wrongPerField: 6,
    });
    await run("POST /api/chat", cases);
    expect(await footprint(person.id)).toEqual(before);
    const transcript = await fetchWorker("/api/agent/get-messages", { headers: { cookie } });
    expect(await transcript.json()).toEqual([]);
  });

  it("POST /api/chat answers odd but valid messages once each", async () => {
    const speaker = await newPerson("fuzz-chat");
    const speakerCookie = await sessionCookie(speaker);
    const fuzz = new Fuzz(SEED + 4);
    const messages = [
      ...UNICODE_EDGES.filter((m) => m.trim()),
      fuzz.unicode(200),
      "x".repeat(8000),
      "I read \ud800Dune",
      "I read Du\u0000ne",
    ];
    expect(messages.length).toBeLessThanOrEqual(19); // the chat limit is 20 a minute
    tally.set("POST /api/chat (accepted)", messages.length);
    for (const message of messages) {
      const response = await fetchWorker("/api/chat", {
        method: "POST",
        headers: { cookie: speakerCookie, origin: ORIGIN, ...JSON_TYPE },
        body: JSON.stringify({ message }),
      });
      record("POST /api/chat (accepted)", response.status);
      expect(response.status, JSON.stringify(message).slice(0, 40)).toBe(200);
      const { text } = await readChatStream(response);
      expect(text.length, JSON.stringify(message).slice(0, 40)).toBeGreaterThan(0);
    }
    const transcript = (await (await fetchWorker("/api/agent/get-messages", { headers: { cookie: speakerCookie } })).json()) as Array<{
      role: string;
    }>;
    expect(transcript.map((m) => m.role)).toEqual(messages.flatMap(() => ["user", "assistant"]));
  });

  it("GET /api/memories?type=&q= never fails and shows only the person's own memories", async () => {
    const fuzz = new Fuzz(SEED + 5);
    const queries: string[] = [];
    for (const edge of UNICODE_EDGES) queries.push(`q=${percentEncode(edge)}`, `type=${percentEncode(edge)}`);
    for (let i = 0; i < 8; i++)
      queries.push(
        `q=${fuzz.percentBytes(fuzz.int(1, 40))}`,
        `type=${fuzz.percentBytes(fuzz.int(1, 12))}&q=${percentEncode(fuzz.unicode(20))}`,
      );
    queries.push(
      "q=",
      "q=%20%20",
      `q=${"x".repeat(501)}`,
      `q=${"dune ".repeat(99)}`,
      `q=${percentEncode("dune & | ! ( ) : * ' \\ <-> %")}`,
      "q=%00",
      "q=%ED%A0%80",
      "q=%C0%80",
      "q=%",
      "q=%E0%A4%A",
      "type=book&type=movie&q=a&q=b",
      "type=BOOK",
      "type=b%00ok",
      `type=${"a".repeat(41)}`,
      "limit=0",
      "limit=-1",
      "limit=1.5",
      "limit=1e2",
      "limit=Infinity",
      "limit=NaN",
      `limit=${"9".repeat(400)}`,
      "limit=0x10",
      "q[]=a",
      "q=dune&q[foo]=bar",
    );
    await run(
      "GET /api/memories",
      queries.map((query) => ({ label: query.slice(0, 60), path: `/api/memories?${query}`, init: { headers: { cookie } } })),
      {
        each: async (c, response) => {
          if (response.status !== 200) return expect(response.status, c.label).toBe(400);
          const { memories } = (await response.json()) as { memories: Array<{ id: string }> };
          for (const memory of memories) expect(memory.id, c.label).toBe(entityId);
        },
      },
    );
    expect(await footprint(person.id)).toEqual(before);
  });

  it("DELETE /api/memories/:id refuses every malformed id and deletes nothing", async () => {
    const fuzz = new Fuzz(SEED + 6);
    const ids = [
      ...UNICODE_EDGES.map((edge) => percentEncode(edge)),
      ...Array.from({ length: 8 }, () => fuzz.percentBytes(fuzz.int(1, 36))),
      ...Array.from({ length: 4 }, () => percentEncode(fuzz.ascii(fuzz.int(1, 60)))),
      crypto.randomUUID(),
      crypto.randomUUID().toUpperCase(),
      entityId.toUpperCase().replace(/-/g, ""),
      `${entityId}%00`,
      `${entityId}x`,
      entityId.slice(0, 35),
      `{${entityId}}`,
      "00000000-0000-0000-0000-000000000000",
      "ffffffff-ffff-ffff-ffff-ffffffffffff",
      `${entityId}%2F..`,
      "%2e%2e",
      "x".repeat(100_000),
      `'%20or%201=1%20--`,
    ];
    const cases: Case[] = ids.map((id) => ({
      label: `id ${id.slice(0, 50)}`,
      path: `/api/memories/${id}`,
      init: { method: "DELETE", headers: { cookie, origin: ORIGIN } },
    }));
    // Bodies are not read, but must not matter either.
    for (let i = 0; i < 4; i++)
      cases.push({
        label: `random body #${i}`,
        path: `/api/memories/${crypto.randomUUID()}`,
        init: { method: "DELETE", headers: { cookie, origin: ORIGIN, ...JSON_TYPE }, body: fuzz.bytes(fuzz.int(1, 70_000)) },
      });
    await run("DELETE /api/memories/:id", cases, {
      each: async (c, response) => expect([400, 404, 405], c.label).toContain(response.status),
    });
    expect(await footprint(person.id)).toEqual(before);
  });

  it("DELETE /api/account refuses every cross-site, forged or malformed attempt and deletes nothing", async () => {
    const fuzz = new Fuzz(SEED + 7);
    const cases: Case[] = [];
    const origins = [
      "null",
      "https://evil.example",
      "https://soma.test.evil.example",
      "http://soma.test",
      "https://soma.test:8443",
      "https://SOMA.test ",
      "soma.test",
      "https://soma.test/",
      "\u00e9\u00ff",
      // Never blank: a blank Origin is no Origin, which the rule lets through (non-browser clients).
      ...Array.from({ length: 6 }, () => `x${fuzz.ascii(fuzz.int(1, 80))}`),
    ];
    for (const origin of origins)
      cases.push({
        label: `origin ${JSON.stringify(origin)}`,
        path: "/api/account",
        init: { method: "DELETE", headers: { cookie, origin } },
      });
    for (const site of ["cross-site", "same-site", "CROSS-SITE", "", fuzz.ascii(10)]) {
      cases.push({
        label: `no origin, sec-fetch-site ${JSON.stringify(site)}`,
        path: "/api/account",
        init: { method: "DELETE", headers: { cookie, "sec-fetch-site": site } },
      });
    }
    const cookies = [
      "__Host-soma_session=",
      "__Host-soma_session=forged",
      `__Host-soma_session=${"a".repeat(10_000)}`,
      "__Host-soma_session=%E0%A4%A",
      "__Host-soma_session=%00",
      `__Host-soma_session="${cookie.split("=")[1]}x"`,
      `__Host-soma_session=${cookie.split("=")[1]!.slice(0, -1)}`,
      ...Array.from({ length: 6 }, () => `__Host-soma_session=${percentEncode(fuzz.unicode(30))}`),
      ...Array.from({ length: 3 }, () => fuzz.ascii(fuzz.int(1, 200))),
    ];
    for (const forged of cookies)
      cases.push({
        label: `cookie ${forged.slice(0, 50)}`,
        path: "/api/account",
        init: { method: "DELETE", headers: { cookie: forged, origin: ORIGIN } },
      });
    for (let i = 0; i < 4; i++)
      cases.push({
        label: `random body, cross-site #${i}`,
        path: "/api/account",
        init: { method: "DELETE", headers: { cookie, origin: "https://evil.example", ...JSON_TYPE }, body: fuzz.bytes(fuzz.int(1, 5000)) },
      });
    await run("DELETE /api/account", cases, { each: async (c, response) => expect([401, 403], c.label).toContain(response.status) });
    expect(await footprint(person.id)).toEqual(before);
    expect((await fetchWorker("/api/me", { headers: { cookie } })).status).toBe(200);
  });
});

describe("GET | PUT | POST /api/workflows", () => {
  it("never fails on unsigned, malformed or oversized requests, and never reaches a sync", async () => {
    const fuzz = new Fuzz(SEED + 13);
    const cases: Case[] = [];
    const runBody = { event: { name: "conversation/turn.completed", data: {} }, events: [], steps: {}, ctx: { run_id: "x", attempt: 0 } };
    cases.push(...bodyCases(fuzz, "/api/workflows?fnId=soma-fact-extract&stepId=step", {}, runBody, 8 * 1024 * 1024, { wrongPerField: 1 }));
    for (let i = 0; i < 6; i++)
      cases.push({ label: `GET random query #${i}`, path: `/api/workflows?${fuzz.percentBytes(fuzz.int(1, 60))}`, init: {} });
    for (const query of ["probe=trust", "deployId=%00", "fnId=%ED%A0%80", `fnId=${"x".repeat(10_000)}`]) {
      cases.push({ label: `GET ?${query.slice(0, 30)}`, path: `/api/workflows?${query}`, init: {} });
      cases.push({
        label: `POST ?${query.slice(0, 30)}`,
        path: `/api/workflows?${query}`,
        init: {
          method: "POST",
          headers: { ...JSON_TYPE, "x-inngest-signature": `t=${Date.now()}&s=${fuzz.ascii(64).replace(/\W/g, "a")}` },
          body: JSON.stringify(runBody),
        },
      });
    }
    await run("GET|POST /api/workflows", cases, {
      database: false,
      // The SDK answers its own refusals ({message}); the app's middleware answers 400 and 413.
      jsonErrors: (response) => response.status === 400 || response.status === 413,
      each: async (c, response) => expect([200, 400, 401, 405, 413, 415], c.label).toContain(response.status),
    });

    // PUT is the sync: a malformed PUT must be refused before it. The bindings point Inngest at a
    // path the stand-in does not serve, so a PUT that reached the sync would answer 5xx here.
    const putBodies: Array<[string, BodyInit]> = [
      // `{"` first: random bytes after it are never valid JSON.
      ...Array.from({ length: 6 }, (_, i): [string, BodyInit] => [
        `random bytes #${i}`,
        Uint8Array.from([0x7b, 0x22, ...fuzz.bytes(fuzz.int(1, 4096))]),
      ]),
      ["truncated JSON", '{"url": "https://evil.example'],
      ["a lone surrogate outside a string", '{"a": \ud800}'],
      ["NUL", "\u0000"],
    ];
    tally.set("PUT /api/workflows", putBodies.length + 1);
    for (const [label, body] of putBodies) {
      const response = await callWithEnv({ INNGEST_BASE_URL: `${env.STAND_IN_URL}/no-sync-in-fuzz` }, "/api/workflows", {
        method: "PUT",
        headers: JSON_TYPE,
        body,
      });
      record("PUT /api/workflows", response.status);
      expect(response.status, label).toBe(400);
      await expectErrorShape(response, label);
    }
    const huge = await callWithEnv({ INNGEST_BASE_URL: `${env.STAND_IN_URL}/no-sync-in-fuzz` }, "/api/workflows", {
      method: "PUT",
      body: streamedBody("x".repeat(8 * 1024 * 1024 + 1)),
      duplex: "half",
    } as RequestInit);
    record("PUT /api/workflows", huge.status);
    expect(huge.status).toBe(413);
  });
});

describe("unknown paths", () => {
  it("answer 404 or 405 as JSON, whatever the path, method or body", async () => {
    const fuzz = new Fuzz(SEED + 14);
    const methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"];
    const prefixes = ["/fuzz-", "/api/fuzz-", "/auth/fuzz-", "/api/memories/x/", "/app/fuzz-", "/api/webhooks/fuzz-"];
    const cases: Case[] = [];
    for (let i = 0; i < 30; i++) {
      const method = fuzz.pick(methods);
      const tail = fuzz.pick([
        () => percentEncode(fuzz.unicode(fuzz.int(1, 30))),
        () => fuzz.percentBytes(fuzz.int(1, 20)),
        () => percentEncode(fuzz.ascii(fuzz.int(1, 40))),
        () => "a/".repeat(fuzz.int(1, 200)),
      ])();
      cases.push({
        label: `${method} ${fuzz.pick(prefixes)}${tail.slice(0, 40)}`,
        path: `${fuzz.pick(prefixes)}${tail}`,
        init: { method, ...(method === "GET" || method === "HEAD" ? {} : { headers: JSON_TYPE, body: fuzz.bytes(fuzz.int(0, 3000)) }) },
      });
    }
    cases.push({ label: "a 100 000 character path", path: `/fuzz-${"x".repeat(100_000)}`, init: {} });
    cases.push({ label: "dot segments", path: "/api/%2e%2e/%2e%2e/etc/passwd", init: {} });
    cases.push({ label: "double slashes", path: "//api//memories", init: {} });
    for (const c of cases) c.label = c.label.replace(/\s+$/, "");
    await run("unknown paths", cases, {
      database: false,
      jsonErrors: (_response, c) => c.init.method !== "HEAD", // HEAD: the same headers, no body
      each: async (c, response) => {
        // /api/memories/* is behind the session (401) before any route is matched.
        expect([401, 404, 405], c.label).toContain(response.status);
        if (c.init.method !== "HEAD") expect(response.headers.get("content-type"), c.label).toMatch(/application\/json/);
      },
    });
  });
});
