// Guards sign-in basics: the development sign-in exists only in development, refuses cross-site
// requests, and starts a real session; logout ends it; a session token is never reusable after.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call, callWithEnv, chatAs, newPerson, testDatabase } from "./helpers";
import { createLoginToken } from "../../db/repositories/auth";

function asDevelopment(path: string, init: RequestInit = {}) {
  return callWithEnv({ ENVIRONMENT: "development" }, path, init);
}

function cookieOf(response: Response): string {
  const set = response.headers.get("set-cookie") ?? "";
  return set.split(";")[0]!;
}

describe("POST /auth/dev", () => {
  it("does not exist outside development", async () => {
    const response = await call("/auth/dev", { method: "POST", headers: { origin: "https://soma.test" } });
    expect(response.status).toBe(404);
  });

  it("refuses a cross-site request", async () => {
    const response = await asDevelopment("/auth/dev", { method: "POST", headers: { origin: "https://evil.example" } });
    expect(response.status).toBe(403);
    expect(response.headers.get("set-cookie")).toBeNull();
  });

  it("signs in the developer with a secure, HttpOnly session cookie that opens the chat", async () => {
    const response = await asDevelopment("/auth/dev", { method: "POST", headers: { origin: "https://soma.test" } });
    expect(response.status).toBe(200);
    const setCookie = response.headers.get("set-cookie") ?? "";
    expect(setCookie).toMatch(/^soma_session=[\w-]{40,};/);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/Secure/);
    expect(setCookie).toMatch(/SameSite=Lax/);
    expect(await chatAs(cookieOf(response), "I read Dune")).toBe("Noted: Dune (book). I'll remember it.");

    const again = await asDevelopment("/auth/dev", { method: "POST", headers: { origin: "https://soma.test" } });
    expect(((await again.json()) as { person: { id: string } }).person.id).toBe(((await response.clone().json()) as { person: { id: string } }).person.id);
    expect(cookieOf(again)).not.toBe(cookieOf(response));
  });
});

describe("POST /logout", () => {
  it("ends the session: the same cookie no longer works", async () => {
    const signIn = await asDevelopment("/auth/dev", { method: "POST", headers: { origin: "https://soma.test" } });
    const cookie = cookieOf(signIn);
    const logout = await call("/logout", { method: "POST", headers: { cookie, origin: "https://soma.test" }, redirect: "manual" });
    expect(logout.status).toBe(303);
    expect(logout.headers.get("location")).toBe("/login");
    const chat = await call("/api/chat", { method: "POST", headers: { cookie, "content-type": "application/json" }, body: '{"message":"hi"}', redirect: "manual" });
    expect(chat.status).toBe(307);
  });
});

describe("the one-time link from /login", () => {
  it("GET only shows a button; POST spends the link once and starts a session", async () => {
    const person = await newPerson();
    const token = await createLoginToken(testDatabase(), person.id, 600);

    const preview = await call(`/auth/link/${token}`);
    expect(preview.status).toBe(200);
    expect(await preview.text()).toContain(`action="/auth/link/${token}"`);

    const first = await call(`/auth/link/${token}`, { method: "POST", headers: { origin: "https://soma.test" }, redirect: "manual" });
    expect(first.status).toBe(303);
    expect(first.headers.get("location")).toBe("/app");
    expect(await chatAs(cookieOf(first), "I read Emma")).toBe("Noted: Emma (book). I'll remember it.");

    const reused = await call(`/auth/link/${token}`, { method: "POST", headers: { origin: "https://soma.test" }, redirect: "manual" });
    expect(reused.status).toBe(400);
    expect(reused.headers.get("set-cookie")).toBeNull();
  });

  it("refuses a cross-site POST and an unknown token", async () => {
    const cross = await call("/auth/link/whatever", { method: "POST", headers: { origin: "https://evil.example" } });
    expect(cross.status).toBe(403);
    const unknown = await call("/auth/link/not-a-token", { method: "POST", headers: { origin: "https://soma.test" } });
    expect(unknown.status).toBe(400);
  });
});

describe("GET /auth/telegram (the Login Widget)", () => {
  async function signed(fields: Record<string, string>, token = env.TELEGRAM_BOT_TOKEN) {
    const dataCheckString = Object.keys(fields).sort().map((k) => `${k}=${fields[k]}`).join("\n");
    const secret = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token));
    const key = await crypto.subtle.importKey("raw", secret, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(dataCheckString)));
    const hash = [...mac].map((b) => b.toString(16).padStart(2, "0")).join("");
    return new URLSearchParams({ ...fields, hash }).toString();
  }
  const now = () => String(Math.floor(Date.now() / 1000));
  const telegramId = () => String(800_000_000 + Math.floor(Math.random() * 1e6));

  it("signs in a correctly signed, fresh widget login and shows the login page's widget", async () => {
    const query = await signed({ id: telegramId(), first_name: "Grace", username: "grace", auth_date: now() });
    const response = await call(`/auth/telegram?${query}`, { redirect: "manual" });
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/app");
    expect(await chatAs(cookieOf(response), "I read Kindred")).toBe("Noted: Kindred (book). I'll remember it.");
    expect(await (await call("/login")).text()).toContain('data-telegram-login="soma_test_bot"');
  });

  it("refuses a wrong signature, another bot's signature, a stale login and junk", async () => {
    const fields = { id: telegramId(), first_name: "Mallory", auth_date: now() };
    const tampered = (await signed(fields)).replace("Mallory", "Alice");
    const otherBot = await signed(fields, "999:other-bot-token");
    const stale = await signed({ ...fields, auth_date: String(Math.floor(Date.now() / 1000) - 3600) });
    for (const query of [tampered, otherBot, stale]) {
      const response = await call(`/auth/telegram?${query}`, { redirect: "manual" });
      expect(response.status).toBe(401);
      expect(response.headers.get("set-cookie")).toBeNull();
    }
    expect((await call("/auth/telegram?id=abc")).status).toBe(400);
  });
});
