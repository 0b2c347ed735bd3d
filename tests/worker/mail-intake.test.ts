// POST /api/webhooks/mail inside workerd: the token, the push's OIDC token (signed by the JWKS
// stand-in), the Pub/Sub envelope, garbage and duplicates. What reaches Inngest is read back from the
// Inngest stand-in; nothing but a valid notification for a connected mailbox is ever sent. Issue 25,
// item 10: the query token, which travels in every push URL, opens nothing alone while the OIDC
// audience is set, and reaches neither Sentry, Axiom nor the console (what Workers Logs records).
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { call, callWithEnv, connectMailbox, envelope, eventually, pushToken } from "./helpers";

interface SentEvent {
  id: string;
  name: string;
  data: { userId: string; emailAddress?: string; historyId: string };
  deliveries: number;
}

async function push(
  body: unknown,
  options: { token?: string | null; bearer?: string | null; contentType?: string } = {},
): Promise<Response> {
  const token = options.token === undefined ? env.MAIL_PUSH_TOKEN : options.token;
  const bearer = options.bearer === undefined ? await pushToken() : options.bearer;
  return call(`/api/webhooks/mail${token === null ? "" : `?token=${encodeURIComponent(token)}`}`, {
    method: "POST",
    headers: { "content-type": options.contentType ?? "application/json", ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

async function sentFor(userId: string): Promise<SentEvent[]> {
  const events = (await (await fetch(`${env.STAND_IN_URL}/__inngest/events?name=mail/notification.received`)).json()) as SentEvent[];
  return events.filter((e) => e.data.userId === userId);
}

async function expectError(response: Response, status: number) {
  expect(response.status).toBe(status);
  const body = (await response.json()) as { error: { code: string; message: string } };
  expect(body.error.message.length).toBeGreaterThan(0);
  return body.error.code;
}

describe("the token", () => {
  it("is required: missing or wrong → 401 JSON, nothing sent", async () => {
    const { userId, email } = await connectMailbox();
    const body = envelope({ emailAddress: email, historyId: "12345" });
    expect(await expectError(await push(body, { token: null }), 401)).toBe("unauthorized");
    expect(await expectError(await push(body, { token: "wrong" }), 401)).toBe("unauthorized");
    expect(await expectError(await push(body, { token: `${env.MAIL_PUSH_TOKEN}x` }), 401)).toBe("unauthorized");
    expect(await sentFor(userId)).toEqual([]);
  });
});

describe("the push's OIDC token (PUBSUB_PUSH_AUDIENCE set)", () => {
  it.each([
    ["missing", null],
    ["for another audience", { aud: "https://elsewhere.example/push" }],
    ["from another issuer", { iss: "https://evil.example" }],
    ["for another service account", { email: "someone@evil.iam.gserviceaccount.com" }],
    ["with an unverified email", { email_verified: false }],
    ["expired", { expiresIn: "-1m" }],
  ])("refuses a token %s with 401", async (_label, claims) => {
    const { userId, email } = await connectMailbox();
    const bearer = claims === null ? null : await pushToken(claims);
    await expectError(await push(envelope({ emailAddress: email, historyId: "1" }), { bearer }), 401);
    expect(await sentFor(userId)).toEqual([]);
  });

  it("refuses a token whose signature was tampered with", async () => {
    const { userId, email } = await connectMailbox();
    const [header, payload, signature] = (await pushToken()).split(".");
    const forged = btoa(JSON.stringify({ ...JSON.parse(atob(payload!.replace(/-/g, "+").replace(/_/g, "/"))), email: "x@evil.example" }))
      .replace(/=+$/, "")
      .replace(/\+/g, "-")
      .replace(/\//g, "_");
    await expectError(await push(envelope({ emailAddress: email, historyId: "1" }), { bearer: `${header}.${forged}.${signature}` }), 401);
    expect(await sentFor(userId)).toEqual([]);
  });
});

describe("a valid push", () => {
  it("becomes mail/notification.received with the Pub/Sub message id as event id → 204", async () => {
    const { userId, email } = await connectMailbox();
    const body = envelope({ emailAddress: email.toUpperCase(), historyId: 987654321 });
    const response = await push(body);
    expect(response.status).toBe(204);
    const sent = await sentFor(userId);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      id: `gmail-push-${body.message.messageId}`,
      data: { userId, historyId: "987654321" },
    });
    // The event names the person, never their address: Inngest keeps events after an account is deleted.
    expect(sent[0]!.data.emailAddress).toBeUndefined();
  });

  it("delivered twice by Pub/Sub is one event (same id, deduplicated by the engine)", async () => {
    const { userId, email } = await connectMailbox();
    const body = envelope({ emailAddress: email, historyId: "555" });
    const [first, second] = await Promise.all([push(body), push(body)]);
    expect([first.status, second.status]).toEqual([204, 204]);
    const sent = await sentFor(userId);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.deliveries).toBe(2);
  });

  it("accepts the token alone when no audience is configured", async () => {
    const { userId, email } = await connectMailbox();
    const body = envelope({ emailAddress: email, historyId: "77" });
    const response = await callWithEnv({ PUBSUB_PUSH_AUDIENCE: "" }, `/api/webhooks/mail?token=${env.MAIL_PUSH_TOKEN}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(204);
    expect(await sentFor(userId)).toHaveLength(1);
  });

  it("answers 503 (so Pub/Sub redelivers) when the workflow engine cannot be reached", async () => {
    const { userId, email } = await connectMailbox();
    const response = await callWithEnv({ INNGEST_BASE_URL: "http://127.0.0.1:9" }, `/api/webhooks/mail?token=${env.MAIL_PUSH_TOKEN}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${await pushToken()}` },
      body: JSON.stringify(envelope({ emailAddress: email, historyId: "78" })),
    });
    expect(await expectError(response, 503)).toBe("unavailable");
    expect(await sentFor(userId)).toEqual([]);
  });
});

describe("bad input", () => {
  it("refuses what is not a Pub/Sub envelope with 4xx JSON", async () => {
    expect(await expectError(await push("{not json"), 400)).toBe("invalid_json");
    expect(await expectError(await push("hello", { contentType: "text/plain" }), 415)).toBe("unsupported_media_type");
    expect(await expectError(await push({ subscription: "x" }), 400)).toBe("bad_request");
    expect(await expectError(await push({ message: { data: "e30=" } }), 400)).toBe("bad_request");
    expect(await expectError(await push({ message: "nope" }), 400)).toBe("bad_request");
    expect(await expectError(await push(JSON.stringify(envelope("x".repeat(70_000)))), 413)).toBe("payload_too_large");
  });

  it.each([
    ["data that is not base64", "%%%not-base64%%%"],
    ["base64 of something that is not JSON", btoa("\u00ff\u00fe binary")],
    ["JSON that is not a Gmail notification", { hello: "world" }],
    ["a history id that is not a number", { emailAddress: "a@b.example", historyId: "12abc" }],
    ["no data at all", undefined],
  ])("acknowledges %s with 204 and sends nothing (no redelivery loop)", async (_label, data) => {
    const before = ((await (await fetch(`${env.STAND_IN_URL}/__inngest/events?name=mail/notification.received`)).json()) as unknown[])
      .length;
    const body = data === undefined ? { message: { messageId: "1" } } : envelope(data);
    const response = await push(body);
    expect(response.status).toBe(204);
    const after = ((await (await fetch(`${env.STAND_IN_URL}/__inngest/events?name=mail/notification.received`)).json()) as unknown[])
      .length;
    expect(after).toBe(before);
  });

  it("acknowledges a mailbox nobody connected with 204 and sends nothing", async () => {
    const body = envelope({ emailAddress: `nobody-${crypto.randomUUID()}@gmail.example`, historyId: "1" });
    const response = await push(body);
    expect(response.status).toBe(204);
    const events = (await (await fetch(`${env.STAND_IN_URL}/__inngest/events?name=mail/notification.received`)).json()) as SentEvent[];
    expect(events.some((e) => e.id === `gmail-push-${body.message.messageId}`)).toBe(false);
  });
});

describe("issue 25, item 10: the query token travels in every push URL", () => {
  afterEach(() => vi.restoreAllMocks());

  it("alone opens nothing while PUBSUB_PUSH_AUDIENCE is set (production): Google's signed token for this audience and account is required too", async () => {
    const { userId, email } = await connectMailbox();
    const body = envelope({ emailAddress: email, historyId: "4242" });
    // Someone who read the URL (a log, a proxy, a screenshot) has the token, and nothing Google signed for us.
    expect(await expectError(await push(body, { bearer: null }), 401)).toBe("unauthorized");
    expect(await expectError(await push(body, { bearer: "not-a-jwt" }), 401)).toBe("unauthorized");
    // A token Google signed for someone else's push endpoint, or for another service account, is not ours.
    expect(await expectError(await push(body, { bearer: await pushToken({ aud: "https://attacker.example/push" }) }), 401)).toBe(
      "unauthorized",
    );
    expect(await expectError(await push(body, { bearer: await pushToken({ email: "attacker@evil.iam.gserviceaccount.com" }) }), 401)).toBe(
      "unauthorized",
    );
    expect(await sentFor(userId)).toEqual([]);
    // The spec's token stays required: Google's token without it is refused too.
    expect(await expectError(await push(body, { token: null }), 401)).toBe("unauthorized");
    expect(await sentFor(userId)).toEqual([]);
    // Both: accepted.
    expect((await push(body)).status).toBe(204);
    expect(await sentFor(userId)).toHaveLength(1);
  });

  it("reaches neither Sentry (URL without its query), Axiom nor the console on a real fault of the intake", async () => {
    const { email } = await connectMailbox();
    const lines = captureConsole();
    const before = (await received("sentry")).length;
    // Postgres unreachable while the intake looks up the mailbox: a 500, reported to Sentry with the request.
    const response = await callWithEnv(
      { HYPERDRIVE: { connectionString: "postgres://soma:pw@127.0.0.1:9/soma" } },
      `/api/webhooks/mail?token=${encodeURIComponent(env.MAIL_PUSH_TOKEN)}&x=1`,
      {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${await pushToken()}` },
        body: JSON.stringify(envelope({ emailAddress: email, historyId: "9" })),
      },
    );
    expect(response.status).toBe(500);
    const requestId = response.headers.get("x-request-id")!;
    const events = await eventually(
      async () => (await received("sentry")).slice(before).filter((r) => r.body.includes(requestId)),
      (r) => r.length > 0,
    );
    expect(events).toHaveLength(1);
    const event = events[0]!.body
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((i) => "exception" in i) as { tags: Record<string, string>; request: { url: string; query_string?: unknown } };
    expect(event.tags.route).toMatch(/^\/api\/webhooks\/mail/);
    // Not "?token=[redacted]": no query at all, whatever its value.
    expect(event.request.url).toBe("https://soma.test/api/webhooks/mail");
    expect(event.request.query_string).toBeUndefined();
    expect(events[0]!.body).not.toContain(env.MAIL_PUSH_TOKEN);
    expect(events[0]!.body).not.toMatch(/token=/);

    const axiom = await eventually(
      async () => (await received("axiom")).filter((r) => r.body.includes(requestId)),
      (r) => r.length > 0,
    );
    const [line] = axiom.flatMap((r) => JSON.parse(r.body) as Array<Record<string, unknown>>).filter((l) => l.requestId === requestId);
    expect(line).toMatchObject({ kind: "request", route: "/api/webhooks/mail", status: 500 });
    for (const text of [...axiom.map((r) => r.body), lines.join("\n")]) {
      expect(text).not.toContain(env.MAIL_PUSH_TOKEN);
      expect(text).not.toMatch(/[?&]token=/);
    }
    expect(lines.join("\n")).toContain(requestId);
  });

  it("a wrong token (say, an old one) is in no log line either: refused, and named nowhere", async () => {
    const lines = captureConsole();
    const probe = `old-push-token-${crypto.randomUUID()}`;
    const response = await push(envelope({ emailAddress: "a@b.example", historyId: "1" }), { token: probe });
    expect(response.status).toBe(401);
    const requestId = response.headers.get("x-request-id")!;
    const axiom = await eventually(
      async () => (await received("axiom")).filter((r) => r.body.includes(requestId)),
      (r) => r.length > 0,
    );
    expect(axiom.length).toBeGreaterThan(0);
    for (const text of [...axiom.map((r) => r.body), lines.join("\n")]) {
      expect(text).not.toContain(probe);
      expect(text).not.toMatch(/[?&]token=/);
    }
  });
});

/** What a telemetry stand-in received (tests/setup/stand-ins.ts). */
async function received(sink: "axiom" | "sentry"): Promise<Array<{ body: string }>> {
  return (await (await fetch(`${env.STAND_IN_URL}/__telemetry?sink=${sink}`)).json()) as Array<{ body: string }>;
}

/** Every console line from now on (what Workers Logs would record), still printed. */
function captureConsole(): string[] {
  const lines: string[] = [];
  for (const level of ["log", "info", "warn", "error", "debug"] as const) {
    const original = console[level].bind(console);
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      lines.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "));
      original(...args);
    });
  }
  return lines;
}
