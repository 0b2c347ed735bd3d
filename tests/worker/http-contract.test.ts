// Guards the HTTP contract every route shares: the login page, the 307 to /login, one JSON error
// shape with a request id, 404/405/400/413/415 for bad requests (never a 500), security headers.
import { describe, expect, it } from "vitest";
import { call, newPerson, sessionCookie } from "./helpers";

interface ErrorBody {
  error: { code: string; message: string; requestId: string };
}

async function expectError(response: Response, status: number, code: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toMatch(/application\/json/);
  const body = (await response.json()) as ErrorBody;
  expect(body.error.code).toBe(code);
  expect(body.error.message.length).toBeGreaterThan(0);
  expect(body.error.requestId).toBe(response.headers.get("x-request-id"));
  return body;
}

describe("GET /login", () => {
  it("is a 200 HTML page", async () => {
    const response = await call("/login");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/text\/html/);
    const text = await response.text();
    expect(text).toContain("<title>Sign in · Soma</title>");
    expect(text).toContain("/login");
  });

  it("carries the security headers", async () => {
    const response = await call("/login");
    const csp = response.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("object-src 'none'");
    expect(response.headers.get("strict-transport-security")).toMatch(/max-age=\d+/);
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(response.headers.get("referrer-policy")).toBe("strict-origin-when-cross-origin");
  });
});

describe("POST /api/chat without a session", () => {
  const variants: Array<[string, RequestInit]> = [
    ["no body", { method: "POST" }],
    ["a valid body", { method: "POST", headers: { "content-type": "application/json" }, body: '{"message":"hi"}' }],
    ["malformed JSON", { method: "POST", headers: { "content-type": "application/json" }, body: "{nope" }],
    ["a huge body", { method: "POST", headers: { "content-type": "application/json" }, body: "x".repeat(2_000_000) }],
    ["a forged cookie", { method: "POST", headers: { cookie: "__Host-soma_session=forged" }, body: "{}" }],
  ];
  for (const [label, init] of variants) {
    it(`answers 307 to /login with ${label}`, async () => {
      const response = await call("/api/chat", { ...init, redirect: "manual" });
      expect(response.status).toBe(307);
      expect(response.headers.get("location")).toBe("/login");
    });
  }
});

describe("errors", () => {
  it("404 JSON for an unknown route", async () => {
    const body = await expectError(await call("/api/nope"), 404, "not_found");
    expect(body.error.message).toContain("/api/nope");
  });

  it("405 JSON with Allow for a known path and the wrong method", async () => {
    const response = await call("/api/health", { method: "DELETE" });
    expect(response.headers.get("allow")).toBe("GET");
    await expectError(response, 405, "method_not_allowed");
    await expectError(await call("/api/chat"), 405, "method_not_allowed");
  });

  it("keeps the caller's request id when it sends one", async () => {
    const response = await call("/api/nope", { headers: { "x-request-id": "req-123" } });
    const body = await expectError(response, 404, "not_found");
    expect(body.error.requestId).toBe("req-123");
  });

  describe("with a session", () => {
    async function chatWith(init: RequestInit) {
      const cookie = await sessionCookie(await newPerson());
      return call("/api/chat", { method: "POST", ...init, headers: { cookie, ...init.headers } });
    }

    it("400 for malformed JSON", async () => {
      await expectError(await chatWith({ headers: { "content-type": "application/json" }, body: '{"message":' }), 400, "invalid_json");
    });

    it("400 naming the field for a wrong shape", async () => {
      const body = await expectError(
        await chatWith({ headers: { "content-type": "application/json" }, body: '{"message": 42}' }),
        400,
        "bad_request",
      );
      expect(body.error.message).toContain("message");
    });

    it("415 for a body that is not JSON", async () => {
      await expectError(await chatWith({ headers: { "content-type": "text/plain" }, body: "hello" }), 415, "unsupported_media_type");
    });

    it("413 for a body over the limit, declared or streamed", async () => {
      const big = JSON.stringify({ message: "x".repeat(70_000) });
      await expectError(await chatWith({ headers: { "content-type": "application/json" }, body: big }), 413, "payload_too_large");
      const stream = new Blob([big]).stream();
      await expectError(
        await chatWith({ headers: { "content-type": "application/json" }, body: stream, duplex: "half" } as RequestInit),
        413,
        "payload_too_large",
      );
    });
  });
});
