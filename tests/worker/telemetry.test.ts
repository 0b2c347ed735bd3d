// Guards the telemetry sinks against their loopback stand-ins: PostHog gets the product events with
// the person's id, Axiom one line per request and per turn, Sentry the unhandled errors with request
// id, route and release — and none of them ever receives a secret value, a session cookie, a token
// (a sign-in link's included: finding 9f) or the text of a message.
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { logJson } from "../../platform/log";
import { personOfChat, sendText } from "./telegram-updates";
import { createLoginToken } from "../../db/repositories/auth";
import {
  call,
  callWithEnv,
  chatAs,
  eventually,
  newChatId,
  newPerson,
  openLoginLink,
  sessionCookie,
  signInPage,
  testDatabase,
  received,
  waitForReplies,
} from "./helpers";

interface PostHogEvent {
  event: string;
  distinct_id: string;
  properties: Record<string, unknown>;
  timestamp: string;
}

async function productEvents(userId: string, count: number): Promise<PostHogEvent[]> {
  return eventually(
    async () =>
      (await received("posthog"))
        .flatMap((r) => (JSON.parse(r.body) as { batch: PostHogEvent[] }).batch)
        .filter((e) => e.distinct_id === userId),
    (events) => events.length >= count,
  );
}

async function logLines(match: (line: Record<string, unknown>) => boolean): Promise<Array<Record<string, unknown>>> {
  return eventually(
    async () => (await received("axiom")).flatMap((r) => JSON.parse(r.body) as Array<Record<string, unknown>>).filter(match),
    (lines) => lines.length > 0,
  );
}

describe("PostHog (product events)", () => {
  it("sign-up and messages from Telegram, captures and recalls from the web, and logins — by person id, with safe properties only", async () => {
    const chatId = newChatId();
    await sendText(chatId, "I just finished reading Piranesi", "Tess");
    await waitForReplies(chatId, 1);
    const telegram = await productEvents(await personOfChat(chatId), 3);
    expect(telegram.map((e) => [e.event, e.properties.channel ?? e.properties.type]).sort()).toEqual([
      ["memory_captured", "book"],
      ["message_received", "telegram"],
      ["user_signed_up", "telegram"],
    ]);
    for (const e of telegram) expect(Object.keys(e).sort()).toEqual(["distinct_id", "event", "properties", "timestamp"]);

    const person = await newPerson();
    const cookie = await sessionCookie(person);
    await chatAs(cookie, "I watched Arrival");
    await chatAs(cookie, "which movies did I watch?");
    const token = await createLoginToken(testDatabase(), person.id, 600);
    expect((await openLoginLink(token)).status).toBe(303);
    const web = await productEvents(person.id, 5);
    const names = web.map((e) => e.event);
    expect(names.filter((n) => n === "message_received")).toHaveLength(2);
    expect(web.find((e) => e.event === "memory_captured")?.properties).toMatchObject({ type: "movie", created: true });
    expect(web.find((e) => e.event === "memory_recalled")?.properties).toMatchObject({ results: 1, typed: true });
    expect(web.find((e) => e.event === "login")?.properties).toMatchObject({ method: "link" });
    // No message text in product analytics.
    expect(JSON.stringify(web)).not.toMatch(/Arrival|which movies/);

    const batch = (await received("posthog")).at(-1)!;
    expect(batch.path).toBe("/batch/");
    expect(JSON.parse(batch.body)).toMatchObject({ api_key: "phc_test_project_key", batch: expect.any(Array) });
  });
});

describe("Axiom (structured logs into soma-logs)", () => {
  it("one line per request with route pattern, status, duration, request id and person; one per turn", async () => {
    const response = await call("/api/health");
    const requestId = response.headers.get("x-request-id");
    const [line] = await logLines((l) => l.requestId === requestId);
    expect(line).toMatchObject({ kind: "request", service: "soma", method: "GET", route: "/api/health", status: 200, requestId });
    expect(typeof line!.durationMs).toBe("number");

    const person = await newPerson();
    const cookie = await sessionCookie(person);
    const memories = await call("/api/memories", { headers: { cookie } });
    const [signedIn] = await logLines((l) => l.requestId === memories.headers.get("x-request-id"));
    expect(signedIn).toMatchObject({ route: "/api/memories", status: 200, userId: person.id });

    // A secret in the path never reaches the logs: the route pattern is logged, not the path.
    const link = await call("/auth/link/some-secret-login-token");
    const [linkLine] = await logLines((l) => l.requestId === link.headers.get("x-request-id"));
    expect(linkLine!.route).toBe("/auth/link/:token");

    await chatAs(cookie, "I visited Porto");
    const [turn] = await logLines((l) => l.kind === "turn" && l.userId === person.id);
    expect(turn).toMatchObject({ kind: "turn", channel: "web", failed: false, tools: 1 });
    const request = (await received("axiom")).at(-1)!;
    expect(request.path).toBe("/v1/datasets/soma-logs/ingest");
    expect(request.authorization).toBe("Bearer xaat-test-axiom-token");
  });
});

describe("Sentry (errors)", () => {
  it("reports a real fault with request id, route and release, without cookies, query string or body", async () => {
    const person = await newPerson();
    const cookie = await sessionCookie(person);
    const before = (await received("sentry")).length;
    // Postgres unreachable: the session lookup fails — a 500, a real fault.
    const response = await callWithEnv(
      { HYPERDRIVE: { connectionString: "postgres://soma:pw@127.0.0.1:9/soma" } },
      `/api/memories?token=${env.MAIL_PUSH_TOKEN}`,
      { headers: { cookie, "user-agent": "telemetry-test" } },
    );
    expect(response.status).toBe(500);
    const requestId = response.headers.get("x-request-id");
    const [envelope] = await eventually(
      async () => (await received("sentry")).slice(before),
      (r) => r.length > 0,
    );
    expect(envelope!.path).toBe("/api/42/envelope/");
    const items = envelope!.body
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const event = items.find((i) => "exception" in i) as {
      tags: Record<string, string>;
      request: { url: string; headers: Record<string, string>; cookies?: unknown; query_string?: unknown };
      release?: string;
    };
    expect(event.tags.requestId).toBe(requestId);
    expect(event.tags.route).toMatch(/^\/api\/memories/);
    expect(event.request.url).toBe("https://soma.test/api/memories");
    expect(event.request.cookies).toBeUndefined();
    expect(event.request.query_string).toBeUndefined();
    expect(Object.keys(event.request.headers).sort()).toEqual(["user-agent"]);
    expect(env.CF_VERSION_METADATA.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(event.release).toBe(env.CF_VERSION_METADATA.id);
    expect(envelope!.body).not.toContain(cookie.split("=")[1]);
  });

  it("does not report client errors (4xx)", async () => {
    const before = (await received("sentry")).length;
    expect((await call("/api/nothing-here")).status).toBe(404);
    expect((await call("/api/messenger/webhook", { method: "POST" })).status).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await received("sentry")).length).toBe(before);
  });
});

describe("no secret ever leaves for a sink", () => {
  it("none of the configured secret values, session tokens or bot tokens appear in anything sent", async () => {
    // Traffic that touches every sink, including the secret-bearing routes.
    const chatId = newChatId();
    await sendText(chatId, "remember that my locker code is 4471", "Tess");
    await waitForReplies(chatId, 1);
    await call(`/api/webhooks/mail?token=${env.MAIL_PUSH_TOKEN}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    await callWithEnv({ HYPERDRIVE: { connectionString: "postgres://soma:pw@127.0.0.1:9/soma" } }, "/api/health");
    await new Promise((resolve) => setTimeout(resolve, 300));

    const all = [...(await received("posthog")), ...(await received("axiom")), ...(await received("sentry"))];
    expect(all.length).toBeGreaterThan(0);
    // Each sink's own credential travels with its requests (PostHog's api_key in the body; the DSN and
    // its public key in Sentry's envelope header); everything else must be clean.
    const payload = all
      .map((r) => r.body.replace(/"api_key":"phc_test_project_key"/g, "").replace(/"(dsn|public_key)":"[^"]*"/g, ""))
      .join("\n");
    const secrets = [
      env.TELEGRAM_BOT_TOKEN,
      env.TELEGRAM_WEBHOOK_SECRET,
      env.TOKEN_ENCRYPTION_KEY,
      env.MAIL_PUSH_TOKEN,
      env.INNGEST_SIGNING_KEY,
      "test-event-key",
      "sk-lf-test",
      "xaat-test-axiom-token",
      "google-client-secret",
      "sentrypublickey",
    ];
    for (const secret of secrets) expect(payload, secret).not.toContain(secret);
    expect(payload).not.toMatch(/__Host-soma_session=/);
    expect(payload).not.toContain("locker code");
  });
});

describe("finding 9f: token-bearing paths and queries are redacted before any sink", () => {
  it("9f: a sign-in link's token reaches neither Sentry, Axiom, PostHog, Langfuse nor the log lines", async () => {
    const person = await newPerson();
    const token = await createLoginToken(testDatabase(), person.id, 600);
    const before = (await received("sentry")).length;
    // The link spent while Postgres is down: a real fault (500), reported to Sentry with its URL.
    const page = await signInPage(`/auth/link/${token}`);
    const failed = await callWithEnv(
      { HYPERDRIVE: { connectionString: "postgres://soma:pw@127.0.0.1:9/soma" } },
      `/auth/link/${token}?state=${token}`,
      {
        method: "POST",
        headers: { origin: "https://soma.test", "content-type": "application/x-www-form-urlencoded", cookie: page.cookie },
        body: new URLSearchParams({ nonce: page.nonce }),
      },
    );
    expect(failed.status).toBe(500);
    const [envelope] = await eventually(
      async () => (await received("sentry")).slice(before),
      (r) => r.length > 0,
    );
    const event = envelope!.body
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((i) => "exception" in i) as { request: { url: string } };
    expect(event.request.url).toBe("https://soma.test/auth/link/[redacted]");

    // Pasted into a chat: the trace (Langfuse) and the product and log sinks see no token either.
    const cookie = await sessionCookie(person);
    await chatAs(cookie, `I read Dune, see https://soma.test/auth/link/${token} and /api/webhooks/mail?token=${token}&x=1`);
    const traced = await eventually(
      async () =>
        ((await (await fetch(`${env.STAND_IN_URL}/__langfuse`)).json()) as Array<{ body: { userId?: string; input?: unknown } }>).filter(
          (e) => e.body.userId === person.id,
        ),
      (events) => events.length > 0,
    );
    expect(traced[0]!.body.input).toBe(
      "I read Dune, see https://soma.test/auth/link/[redacted] and /api/webhooks/mail?token=[redacted]&x=1",
    );

    // The Worker's own log lines (Workers Logs) go through the same redaction.
    const lines: string[] = [];
    const spy = vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
    try {
      logJson("info", {
        url: `https://soma.test/auth/link/${token}`,
        callback: `/auth/google/callback?code=${token}&state=${token}`,
        route: "/auth/link/:token",
      });
    } finally {
      spy.mockRestore();
    }
    expect(JSON.parse(lines[0]!)).toEqual({
      level: "info",
      url: "https://soma.test/auth/link/[redacted]",
      callback: "/auth/google/callback?code=[redacted]&state=[redacted]",
      route: "/auth/link/:token",
    });

    await new Promise((resolve) => setTimeout(resolve, 300));
    const everything = [...(await received("posthog")), ...(await received("axiom")), ...(await received("sentry"))]
      .map((r) => r.body)
      .join("\n");
    const langfuse = await (await fetch(`${env.STAND_IN_URL}/__langfuse`)).text();
    expect(everything).not.toContain(token);
    expect(langfuse).not.toContain(token);
  });
});
