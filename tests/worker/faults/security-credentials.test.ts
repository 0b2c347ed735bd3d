// Guards sign-in and the secrets behind it: session fixation (a made-up cookie, or another person's
// logged-out one, carried into every sign-in route), a spent sign-in link replayed however often and
// however fast, the constant-time secret comparison and its identical refusals, and that no secret or
// token ever reaches the Worker's logs. Each attempt is checked against what is really stored or
// logged afterwards. Between people and between sites: security-boundaries.test.ts.
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { createLoginToken } from "../../../db/repositories/auth";
import { secretsEqual } from "../../../worker/auth/secrets";
import {
  botReplies,
  callWithEnv,
  failBotApi,
  newChatId,
  newPerson,
  openLoginLink,
  sessionCookie,
  signInPage,
  testDatabase,
  waitForReplies,
} from "../helpers";
import { connectMailbox, envelope, expectErrorShape, fetchWorker, footprint, owner, postUpdate, pushToken, textUpdate } from "./support";
import { ORIGIN, sessionOf, whoIs } from "./security-support";

describe("session fixation", () => {
  it("a made-up cookie carried into every sign-in route is replaced by a new random token, and never authenticates", async () => {
    const planted = "attacker-chosen-session-value-0123456789abcdef";
    const signedIn: Array<[string, Response, string]> = [];

    const person = await newPerson("fixation-link");
    const token = await createLoginToken(testDatabase(), person.id, 600);
    signedIn.push(["the /login link", await openLoginLink(token, `__Host-soma_session=${planted}`), person.id]);

    const dev = await callWithEnv({ ENVIRONMENT: "development" }, "/auth/dev", {
      method: "POST",
      headers: { origin: ORIGIN, cookie: `__Host-soma_session=${planted}` },
    });
    signedIn.push(["the development sign-in", dev, ((await dev.clone().json()) as { person: { id: string } }).person.id]);

    const start = await fetchWorker("/auth/google/start?intent=signin");
    const flow = (start.headers.get("set-cookie") ?? "").split(";")[0]!;
    const state = new URL(start.headers.get("location")!).searchParams.get("state")!;
    const sub = crypto.randomUUID();
    const google = await fetchWorker(`/auth/google/callback?code=good-${sub}&state=${state}`, {
      headers: { cookie: `${flow}; __Host-soma_session=${planted}` },
    });
    const [googlePerson] = await owner()`select id from auth.users where google_sub = ${sub}`;
    signedIn.push(["Google", google, googlePerson!.id as string]);

    for (const [route, response, personId] of signedIn) {
      expect([200, 303], route).toContain(response.status);
      const fresh = sessionOf(response);
      expect(fresh, route).toMatch(/^[\w-]{40,}$/);
      expect(fresh, route).not.toBe(planted);
      expect(await whoIs(fresh!), route).toBe(personId);
    }
    expect(await whoIs(planted)).toBeNull();
  });

  it("another person's old session cookie carried into a sign-in is not revived and does not become the new session", async () => {
    const carol = await newPerson("fixation-old");
    const old = (await sessionCookie(carol)).slice("__Host-soma_session=".length);
    expect(
      (await fetchWorker("/logout", { method: "POST", headers: { origin: ORIGIN, cookie: `__Host-soma_session=${old}` } })).status,
    ).toBe(303);
    expect(await whoIs(old)).toBeNull();

    const dave = await newPerson("fixation-new");
    const token = await createLoginToken(testDatabase(), dave.id, 600);
    const response = await openLoginLink(token, `__Host-soma_session=${old}`);
    expect(response.status).toBe(303);
    const fresh = sessionOf(response)!;
    expect(fresh).not.toBe(old);
    expect(await whoIs(fresh)).toBe(dave.id);
    expect(await whoIs(old)).toBeNull();
    expect(await footprint(carol.id)).toMatchObject({ sessions: 0 });
  });
});

describe("the one-time sign-in link", () => {
  it("a spent link is 400 with no session, however often and however fast it is replayed", async () => {
    const person = await newPerson("spent-link");
    const token = await createLoginToken(testDatabase(), person.id, 600);
    const page = await signInPage(`/auth/link/${token}`);
    const post = () =>
      fetchWorker(`/auth/link/${token}`, {
        method: "POST",
        headers: { origin: ORIGIN, "content-type": "application/x-www-form-urlencoded", cookie: page.cookie },
        body: new URLSearchParams({ nonce: page.nonce }),
      });
    // Five at once: exactly one spends it.
    const burst = await Promise.all(Array.from({ length: 5 }, post));
    expect(burst.map((r) => r.status).sort()).toEqual([303, 400, 400, 400, 400]);
    expect(burst.filter((r) => sessionOf(r))).toHaveLength(1);
    expect(await footprint(person.id)).toMatchObject({ sessions: 1, open_login_tokens: 0 });
    for (let i = 0; i < 3; i++) {
      const again = await post();
      expect(again.status).toBe(400);
      expect(again.headers.get("set-cookie")).toBeNull();
      expect((await expectErrorShape(again, "replay")).error.code).toBe("bad_request");
    }
    expect(await footprint(person.id)).toMatchObject({ sessions: 1, open_login_tokens: 0 });
  });
});

// ---------------------------------------------------------------------------------------------------

describe("shared secrets", () => {
  it("secretsEqual: equal, unequal, different length, empty and missing", async () => {
    const secret = "s3cr3t-value-of-some-length";
    expect(await secretsEqual(secret, secret)).toBe(true);
    expect(await secretsEqual(`${secret.slice(0, -1)}X`, secret)).toBe(false); // same length
    expect(await secretsEqual(`${secret}x`, secret)).toBe(false); // longer
    expect(await secretsEqual(secret.slice(0, 5), secret)).toBe(false); // shorter, a prefix
    expect(await secretsEqual("", secret)).toBe(false);
    expect(await secretsEqual(undefined, secret)).toBe(false);
    expect(await secretsEqual(null, secret)).toBe(false);
    expect(await secretsEqual(undefined, "")).toBe(false); // missing never matches, even an empty secret
    expect(await secretsEqual(null, "")).toBe(false);
    expect(await secretsEqual("", "")).toBe(true); // equal strings; callers refuse an empty configured secret first
    expect(await secretsEqual("é", "e\u0301")).toBe(false); // compared as bytes, no normalization
  });

  it("an empty configured secret refuses everything, including an empty header", async () => {
    const chatId = newChatId();
    const response = await callWithEnv({ TELEGRAM_WEBHOOK_SECRET: "" }, "/api/messenger/webhook", {
      method: "POST",
      headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": "" },
      body: JSON.stringify(textUpdate(chatId, "hello")),
    });
    expect(response.status).toBe(401);
    expect(await botReplies(chatId)).toEqual([]);
  });

  it("the webhook answers a wrong secret of the same length and of another length identically", async () => {
    const secret = env.TELEGRAM_WEBHOOK_SECRET;
    const chatId = newChatId();
    const wrong = {
      sameLength: `${secret.slice(0, -1)}${secret.endsWith("x") ? "y" : "x"}`,
      shorter: secret.slice(0, 3),
      longer: `${secret}-and-more`,
      empty: "",
    };
    const shapes: unknown[] = [];
    for (const [label, value] of Object.entries(wrong)) {
      const response = await postUpdate(textUpdate(chatId, "hello"), { "x-telegram-bot-api-secret-token": value });
      expect(response.status, label).toBe(401);
      const body = await expectErrorShape(response.clone(), label);
      shapes.push({
        status: response.status,
        type: response.headers.get("content-type"),
        code: body.error.code,
        message: body.error.message,
        keys: Object.keys(body.error).sort(),
      });
    }
    expect(shapes.every((s) => JSON.stringify(s) === JSON.stringify(shapes[0]))).toBe(true);
    expect(await botReplies(chatId)).toEqual([]);
  });

  it("the mail push answers a wrong token of the same length and of another length identically", async () => {
    const token = env.MAIL_PUSH_TOKEN;
    const { userId, email } = await connectMailbox("secret-compare");
    const body = JSON.stringify(envelope({ emailAddress: email, historyId: "9" }));
    const shapes: unknown[] = [];
    for (const value of [`${token.slice(0, -1)}${token.endsWith("x") ? "y" : "x"}`, token.slice(0, 3), `${token}-and-more`]) {
      const response = await fetchWorker(`/api/webhooks/mail?token=${encodeURIComponent(value)}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${await pushToken()}` },
        body,
      });
      const error = await expectErrorShape(response, value);
      shapes.push({ status: response.status, code: error.error.code, message: error.error.message });
    }
    expect(shapes).toEqual(Array.from({ length: 3 }, () => ({ status: 401, code: "unauthorized", message: "Wrong or missing token." })));
    const events = (await (await fetch(`${env.STAND_IN_URL}/__inngest/events?name=mail/notification.received`)).json()) as Array<{
      data: { userId: string };
    }>;
    expect(events.filter((e) => e.data.userId === userId)).toEqual([]);
  });
});

describe("no secret in the Worker's logs", () => {
  // The Worker and its Durable Objects run in this test's isolate: spying on console sees their log
  // lines (the structured logJson lines, the SDKs' own warnings and errors).
  it("a sign-in link flow, mail pushes with the token, webhooks with the secret, failures included, log none of them", async () => {
    const lines: string[] = [];
    const capture = (...args: unknown[]) => {
      lines.push(
        args
          .map((a) => (a instanceof Error ? `${a.name}: ${a.message}\n${a.stack}` : typeof a === "string" ? a : JSON.stringify(a)))
          .join(" "),
      );
    };
    for (const method of ["log", "info", "warn", "error", "debug"] as const) vi.spyOn(console, method).mockImplementation(capture);
    const secrets: Record<string, string> = {};
    try {
      // Telegram: /login through the webhook, then the link, then the session.
      const chatId = newChatId();
      expect((await postUpdate(textUpdate(chatId, "/login"))).status).toBe(200);
      const [reply] = await waitForReplies(chatId, 1);
      const link = new URL(/https:\/\/\S+/.exec(reply!)![0]);
      secrets.loginLinkToken = link.pathname.split("/").pop()!;
      const signIn = await openLoginLink(secrets.loginLinkToken);
      expect(signIn.status).toBe(303);
      secrets.sessionToken = sessionOf(signIn)!;
      expect(await whoIs(secrets.sessionToken)).not.toBeNull();
      // A failed delivery is logged by the agent (proves its lines are captured too).
      await failBotApi({ method: "sendMessage", chatId, times: 1, errorCode: 400 });
      expect((await postUpdate(textUpdate(chatId, "I read Logbook"))).status).toBe(200);
      const deadline = Date.now() + 10_000;
      while (!lines.some((l) => l.includes('"delivery"')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      expect(lines.some((l) => l.includes('"delivery"'))).toBe(true);
      // The same link again (refused), a wrong secret, a wrong mail token.
      expect((await openLoginLink(secrets.loginLinkToken)).status).toBe(400);
      expect(
        (await postUpdate(textUpdate(chatId, "x"), { "x-telegram-bot-api-secret-token": `${env.TELEGRAM_WEBHOOK_SECRET}!` })).status,
      ).toBe(401);
      // Mail: a valid push, a rejected OIDC token, a push Inngest cannot take (logged as an error).
      const { email } = await connectMailbox("log-check");
      const bearer = await pushToken();
      secrets.oidcToken = bearer;
      const push = (init: { bearer: string; overrides?: Record<string, unknown> }) => {
        const request = {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${init.bearer}` },
          body: JSON.stringify(envelope({ emailAddress: email, historyId: "5" })),
        };
        const path = `/api/webhooks/mail?token=${encodeURIComponent(env.MAIL_PUSH_TOKEN)}`;
        return init.overrides ? callWithEnv(init.overrides, path, request) : fetchWorker(path, request);
      };
      expect((await push({ bearer })).status).toBe(204);
      expect((await push({ bearer: `${bearer.slice(0, -4)}AAAA` })).status).toBe(401);
      expect((await push({ bearer, overrides: { INNGEST_BASE_URL: "http://127.0.0.1:9" } })).status).toBe(503);
      await (await fetchWorker("/api/me", { headers: { cookie: `__Host-soma_session=${secrets.sessionToken}` } })).text();
    } finally {
      vi.restoreAllMocks();
    }
    const configured = {
      TELEGRAM_BOT_TOKEN: env.TELEGRAM_BOT_TOKEN,
      "TELEGRAM_BOT_TOKEN (secret part)": env.TELEGRAM_BOT_TOKEN.split(":")[1]!,
      TELEGRAM_WEBHOOK_SECRET: env.TELEGRAM_WEBHOOK_SECRET,
      MAIL_PUSH_TOKEN: env.MAIL_PUSH_TOKEN,
      INNGEST_EVENT_KEY: (env as unknown as Record<string, string>).INNGEST_EVENT_KEY!,
      INNGEST_SIGNING_KEY: env.INNGEST_SIGNING_KEY,
      TOKEN_ENCRYPTION_KEY: env.TOKEN_ENCRYPTION_KEY,
      GOOGLE_CLIENT_SECRET: (env as unknown as Record<string, string>).GOOGLE_CLIENT_SECRET!,
    };
    const output = lines.join("\n");
    console.log(`captured ${lines.length} log lines of the Worker and its agents (${output.length} characters)`);
    expect(lines.length).toBeGreaterThan(3);
    for (const [name, value] of Object.entries({ ...configured, ...secrets })) {
      expect(value.length, name).toBeGreaterThan(8);
      expect(output.includes(value), `${name} appears in the logs`).toBe(false);
    }
  });
});
