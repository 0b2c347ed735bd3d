// Guards sign-in: the development sign-in exists only in development, refuses cross-site requests,
// and starts a real session; logout ends it; a session token is never reusable after; a sign-in counts
// only when this browser started it on Soma's own page (finding 5: login CSRF).
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call, callWithEnv, chatAs, newPerson, openLoginLink, sessionCookie, signInPage, testDatabase } from "./helpers";
import { eq } from "drizzle-orm";
import { createLoginToken } from "../../db/repositories/auth";
import { authSessions } from "../../db/schema";

function asDevelopment(path: string, init: RequestInit = {}) {
  return callWithEnv({ ENVIRONMENT: "development" }, path, init);
}

function cookieOf(response: Response): string {
  const set = response.headers.get("set-cookie") ?? "";
  return set.split(";")[0]!;
}

function sessionOf(response: Response): string | undefined {
  return response.headers
    .getSetCookie()
    .find((c) => c.startsWith("__Host-soma_session="))
    ?.split(";")[0];
}

async function signedWidgetQuery(fields: Record<string, string>, token = env.TELEGRAM_BOT_TOKEN): Promise<string> {
  const dataCheckString = Object.keys(fields)
    .sort()
    .map((k) => `${k}=${fields[k]}`)
    .join("\n");
  const secret = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token));
  const key = await crypto.subtle.importKey("raw", secret, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(dataCheckString)));
  const hash = [...mac].map((b) => b.toString(16).padStart(2, "0")).join("");
  return new URLSearchParams({ ...fields, hash }).toString();
}
const now = () => String(Math.floor(Date.now() / 1000));
const telegramId = () => String(800_000_000 + Math.floor(Math.random() * 1e6));

/** The widget's redirect as the browser that loaded /login makes it (the nonce is in the auth URL). */
async function widgetRedirect(query: string, browser: { nonce: string; cookie: string }, headers: Record<string, string> = {}) {
  return call(`/auth/telegram?nonce=${browser.nonce}&${query}`, {
    headers: { cookie: browser.cookie, "sec-fetch-site": "same-origin", ...headers },
    redirect: "manual",
  });
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
    expect(setCookie).toMatch(/^__Host-soma_session=[\w-]{40,};/);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/Secure/);
    expect(setCookie).toMatch(/SameSite=Lax/);
    expect(await chatAs(cookieOf(response), "I read Dune")).toBe("Noted: Dune (book). I'll remember it.");

    const again = await asDevelopment("/auth/dev", { method: "POST", headers: { origin: "https://soma.test" } });
    expect(((await again.json()) as { person: { id: string } }).person.id).toBe(
      ((await response.clone().json()) as { person: { id: string } }).person.id,
    );
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
    const chat = await call("/api/chat", {
      method: "POST",
      headers: { cookie, "content-type": "application/json" },
      body: '{"message":"hi"}',
      redirect: "manual",
    });
    expect(chat.status).toBe(307);
  });
});

describe("the one-time link from /login", () => {
  it("GET only shows a button; POST from that page spends the link once and starts a session", async () => {
    const person = await newPerson();
    const token = await createLoginToken(testDatabase(), person.id, 600);

    const preview = await signInPage(`/auth/link/${token}`);
    expect(preview.html).toContain(`action="/auth/link/${token}"`);
    // Whose account it is, so that someone handed another person's link can tell.
    expect(preview.html).toContain(`signs this browser in as <strong>${person.displayName}</strong>`);
    expect(preview.cookie).toMatch(/^__Host-soma_login=[\w-]{43}$/);

    const first = await openLoginLink(token);
    expect(first.status).toBe(303);
    expect(first.headers.get("location")).toBe("/app");
    expect(await chatAs(sessionOf(first)!, "I read Emma")).toBe("Noted: Emma (book). I'll remember it.");

    const reused = await openLoginLink(token);
    expect(reused.status).toBe(400);
    expect(sessionOf(reused)).toBeUndefined();
  });

  it("refuses a cross-site POST and an unknown token", async () => {
    const cross = await call("/auth/link/whatever", { method: "POST", headers: { origin: "https://evil.example" } });
    expect(cross.status).toBe(403);
    const unknown = await openLoginLink("not-a-token");
    expect(unknown.status).toBe(400);
  });
});

describe("GET /auth/telegram (the Login Widget)", () => {
  it("signs in a correctly signed, fresh widget login coming back to the browser that loaded /login", async () => {
    const login = await call("/login");
    const page = await login.text();
    expect(page).toContain('data-telegram-login="soma_test_bot"');
    expect(page).toMatch(/data-auth-url="\/auth\/telegram\?nonce=[\w-]{43}"/);
    expect(login.headers.get("cache-control")).toBe("no-store");
    const nonceCookie = login.headers.getSetCookie().find((c) => c.startsWith("__Host-soma_login="))!;
    for (const attribute of [/HttpOnly/, /Secure/, /SameSite=Lax/, /Path=\//, /Max-Age=600/]) expect(nonceCookie).toMatch(attribute);

    const response = await widgetRedirect(
      await signedWidgetQuery({ id: telegramId(), first_name: "Grace", username: "grace", auth_date: now() }),
      await signInPage(),
    );
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/app");
    expect(await chatAs(sessionOf(response)!, "I read Kindred")).toBe("Noted: Kindred (book). I'll remember it.");
    // The nonce has served its sign-in: the browser is told to forget it.
    expect(response.headers.getSetCookie().find((c) => c.startsWith("__Host-soma_login="))).toMatch(/Max-Age=0/);
  });

  it("refuses a wrong signature, another bot's signature, a stale login and junk", async () => {
    const browser = await signInPage();
    const fields = { id: telegramId(), first_name: "Mallory", auth_date: now() };
    const tampered = (await signedWidgetQuery(fields)).replace("Mallory", "Alice");
    const otherBot = await signedWidgetQuery(fields, "999:other-bot-token");
    const stale = await signedWidgetQuery({ ...fields, auth_date: String(Math.floor(Date.now() / 1000) - 3600) });
    for (const query of [tampered, otherBot, stale]) {
      const response = await widgetRedirect(query, browser);
      expect(response.status).toBe(401);
      expect(sessionOf(response)).toBeUndefined();
    }
    expect((await widgetRedirect("id=abc", browser)).status).toBe(400);
  });
});

describe("finding 5: login CSRF through the Telegram widget and the one-time link", () => {
  it("a correctly signed widget URL opened by another browser signs nobody in", async () => {
    // The attacker signs in with their own Telegram account and keeps the URL (with their own nonce).
    const attacker = await signInPage();
    const victim = await signInPage();
    const query = await signedWidgetQuery({ id: telegramId(), first_name: "Mallory", auth_date: now() });
    const attempts = [
      call(`/auth/telegram?${query}`, { redirect: "manual" }), // the bare signed URL
      call(`/auth/telegram?${query}`, { headers: { cookie: victim.cookie }, redirect: "manual" }), // victim's cookie, no nonce
      call(`/auth/telegram?nonce=${attacker.nonce}&${query}`, { headers: { cookie: victim.cookie }, redirect: "manual" }), // the attacker's nonce
      call(`/auth/telegram?nonce=${attacker.nonce}&${query}`, { redirect: "manual" }), // a nonce but no cookie
      widgetRedirect(query, victim, { "sec-fetch-site": "cross-site" }), // even the right nonce, from another site
    ];
    for (const response of await Promise.all(attempts)) {
      expect(response.status).toBe(403);
      expect(sessionOf(response)).toBeUndefined();
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe("forbidden");
    }
  });

  it("a browser navigation without the proof gets a page saying why and the way back, not a session", async () => {
    const query = await signedWidgetQuery({ id: telegramId(), first_name: "Mallory", auth_date: now() });
    const response = await call(`/auth/telegram?${query}`, { headers: { accept: "text/html,application/xhtml+xml" }, redirect: "manual" });
    expect(response.status).toBe(403);
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    const page = await response.text();
    expect(page).toContain("did not start on this browser&#39;s sign-in page");
    expect(page).toContain('href="/login"');
    expect(sessionOf(response)).toBeUndefined();
  });

  it("a link POST that did not come from the link's page in this browser spends nothing and signs nobody in", async () => {
    const owner = await newPerson("link-owner");
    const token = await createLoginToken(testDatabase(), owner.id, 600);
    const attacker = await signInPage(`/auth/link/${token}`);
    const victim = await signInPage("/login");
    const post = (headers: Record<string, string>, nonce?: string) =>
      call(`/auth/link/${token}`, {
        method: "POST",
        headers: { origin: "https://soma.test", "content-type": "application/x-www-form-urlencoded", ...headers },
        body: new URLSearchParams(nonce ? { nonce } : {}),
        redirect: "manual",
      });
    for (const response of [
      await post({}),
      await post({ cookie: victim.cookie }),
      await post({ cookie: victim.cookie }, attacker.nonce),
      await post({}, attacker.nonce),
    ]) {
      expect(response.status).toBe(403);
      expect(sessionOf(response)).toBeUndefined();
    }
    // Nothing was spent: the owner's own browser still signs in with it.
    const own = await openLoginLink(token);
    expect(own.status).toBe(303);
    expect(sessionOf(own)).toBeDefined();
  });

  it("a link does not silently switch a signed-in browser to another person's account", async () => {
    const victim = await newPerson("signed-in");
    const cookie = await sessionCookie(victim);
    const owner = await newPerson("link-giver");
    const token = await createLoginToken(testDatabase(), owner.id, 600);
    const page = await signInPage(`/auth/link/${token}`);
    expect(page.html).toContain("Continue only if that was you");
    const response = await openLoginLink(token, cookie);
    expect(response.status).toBe(409);
    expect(sessionOf(response)).toBeUndefined();
    const me = (await (await call("/api/me", { headers: { cookie } })).json()) as { id: string };
    expect(me.id).toBe(victim.id);
  });
});

describe("issue 19, finding 4: the session cookie is __Host-soma_session", () => {
  /** A session token for a new person, its session made at `createdAt`. */
  async function sessionMadeAt(createdAt: Date): Promise<{ token: string; personId: string }> {
    const person = await newPerson("cookie");
    const token = (await sessionCookie(person)).slice("__Host-soma_session=".length);
    await testDatabase().withAuth((tx) => tx.update(authSessions).set({ createdAt }).where(eq(authSessions.userId, person.id)));
    return { token, personId: person.id };
  }
  const whoAmI = async (cookie: string) => {
    const response = await call("/api/me", { headers: { cookie } });
    return {
      status: response.status,
      id: response.ok ? ((await response.json()) as { id: string }).id : null,
      setCookies: response.headers.getSetCookie(),
    };
  };

  it("is issued with the prefix, Secure, Path=/ and no Domain", async () => {
    const response = await asDevelopment("/auth/dev", { method: "POST", headers: { origin: "https://soma.test" } });
    const set = response.headers.getSetCookie().find((c) => c.startsWith("__Host-soma_session="));
    expect(set).toMatch(/; Secure/i);
    expect(set).toMatch(/; Path=\//i);
    expect(set).not.toMatch(/Domain=/i);
  });

  it("moves a session issued before the prefix to the new name, once, and clears the old cookie", async () => {
    const { token, personId } = await sessionMadeAt(new Date("2026-11-01T00:00:00Z"));
    const first = await whoAmI(`soma_session=${token}`);
    expect([first.status, first.id]).toEqual([200, personId]);
    expect(first.setCookies.find((c) => c.startsWith("__Host-soma_session="))).toMatch(new RegExp(`^__Host-soma_session=${token};`));
    expect(first.setCookies.find((c) => c.startsWith("soma_session="))).toMatch(/Max-Age=0/i);
    const after = await whoAmI(`__Host-soma_session=${token}`);
    expect([after.status, after.id]).toEqual([200, personId]);
  });

  it("never takes a session made since under the old name: it cannot be tossed in from a sibling subdomain", async () => {
    const { token } = await sessionMadeAt(new Date());
    expect((await whoAmI(`soma_session=${token}`)).status).toBe(401);
  });

  it("reads only the prefixed cookie when both arrive, whatever the old one holds", async () => {
    const mine = await sessionMadeAt(new Date());
    const planted = await sessionMadeAt(new Date("2026-11-01T00:00:00Z"));
    const both = await whoAmI(`soma_session=${planted.token}; __Host-soma_session=${mine.token}`);
    expect([both.status, both.id]).toEqual([200, mine.personId]);
  });
});
