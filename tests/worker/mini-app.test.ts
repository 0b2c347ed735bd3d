// Guards the Mini App's sign-in (issue 29): Telegram's launch data checked as core.telegram.org/bots/webapps
// documents it, exchanged for a session sent as a bearer header (a cross-site iframe gets no cookies);
// forged, other-bot, stale and user-less launches refused with a clear JSON error and no session; the
// Mini App's pages framed only by Telegram's web client; and the session seeing only its own person's data.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { AccountDeletedError, ensureTelegramPerson } from "../../db/repositories/auth";
import { verifyMiniAppLaunch } from "../../worker/auth/telegram-mini-app";
import { signedInitData, type LaunchUser } from "../setup/telegram-mini-app";
import { call, callWithEnv, eventually, received, sessionCookie, testDatabase } from "./helpers";
import { sql } from "drizzle-orm";

const BOT = env.TELEGRAM_BOT_TOKEN;
const telegramUser = (first_name = "Ada"): LaunchUser => ({ id: 700_000_000 + Math.floor(Math.random() * 1e8), first_name });
const hourAgo = (extraSeconds: number) => Math.floor(Date.now() / 1000) - 3600 - extraSeconds;

function launch(initData: string, headers: Record<string, string> = {}) {
  return call("/auth/telegram/mini-app", {
    method: "POST",
    headers: { "content-type": "application/json", origin: "https://soma.test", ...headers },
    body: JSON.stringify({ initData }),
  });
}

async function bearerOf(initData: string): Promise<string> {
  const response = await launch(initData);
  expect(response.status).toBe(200);
  return ((await response.json()) as { token: string }).token;
}

describe("verifyMiniAppLaunch: Telegram's documented check", () => {
  it("accepts launch data signed for this bot, with its user", async () => {
    const user = { ...telegramUser("Zoë & Ünal"), last_name: "d'Arc", username: "zoe" };
    const result = await verifyMiniAppLaunch(await signedInitData(BOT, { user }), BOT);
    expect(result).toMatchObject({ ok: true, user: { id: user.id, first_name: "Zoë & Ünal", last_name: "d'Arc" } });
  });

  it("checks the values as received: re-encoding them the other way (space as %20, not +) still verifies", async () => {
    const initData = await signedInitData(BOT, { user: telegramUser("Mary Ann") });
    expect(initData).toContain("+");
    expect((await verifyMiniAppLaunch(initData.replaceAll("+", "%20"), BOT)).ok).toBe(true);
  });

  it("refuses a changed field (forged), another bot's signature, a stale or future date, no user, a repeated field", async () => {
    const signed = await signedInitData(BOT, { user: telegramUser() });
    const forged = signed.replace(/user=[^&]+/, `user=${encodeURIComponent(JSON.stringify({ id: 1, first_name: "Mallory" }))}`);
    expect(await verifyMiniAppLaunch(forged, BOT)).toEqual({ ok: false, reason: "forged" });
    expect(await verifyMiniAppLaunch(await signedInitData("987654:other-bot"), BOT)).toEqual({ ok: false, reason: "forged" });
    expect(await verifyMiniAppLaunch(await signedInitData(BOT, { authDate: hourAgo(5) }), BOT)).toEqual({ ok: false, reason: "stale" });
    expect((await verifyMiniAppLaunch(await signedInitData(BOT, { authDate: hourAgo(-60) }), BOT)).ok).toBe(true);
    const future = Math.floor(Date.now() / 1000) + 600;
    expect(await verifyMiniAppLaunch(await signedInitData(BOT, { authDate: future }), BOT)).toEqual({ ok: false, reason: "stale" });
    // Launched from a group's attachment menu without a user: nobody to sign in.
    const groupOnly = await signedInitData(BOT, { user: null, extra: { chat_type: "group", chat_instance: "-1" } });
    expect(await verifyMiniAppLaunch(groupOnly, BOT)).toEqual({ ok: false, reason: "no_user" });
    expect(await verifyMiniAppLaunch(`${signed}&auth_date=1`, BOT)).toEqual({ ok: false, reason: "malformed" });
    expect(await verifyMiniAppLaunch("user=%7B%7D", BOT)).toEqual({ ok: false, reason: "malformed" });
  });
});

describe("POST /auth/telegram/mini-app", () => {
  it("signs in the Telegram person the bot already knows, as a bearer session that reads their data", async () => {
    const user = telegramUser("Grace");
    const known = await ensureTelegramPerson(testDatabase(), { telegramUserId: user.id, chatId: user.id, displayName: "Grace" });
    const response = await launch(await signedInitData(BOT, { user }));
    expect(response.status).toBe(200);
    expect(response.headers.get("set-cookie")).toBeNull();
    const body = (await response.json()) as { token: string; person: { id: string; displayName: string } };
    expect(body.person).toEqual({ id: known.id, displayName: "Grace" });
    const me = await call("/api/me", { headers: { authorization: `Bearer ${body.token}` } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ id: known.id, displayName: "Grace", telegram: { linked: true } });
  });

  it("creates a newcomer as /start does, and each person sees only their own memories", async () => {
    const [first, second] = [telegramUser("First"), telegramUser("Second")];
    const [a, b] = [
      await bearerOf(await signedInitData(BOT, { user: first })),
      await bearerOf(await signedInitData(BOT, { user: second })),
    ];
    const meA = (await (await call("/api/me", { headers: { authorization: `Bearer ${a}` } })).json()) as { id: string };
    const again = await ensureTelegramPerson(testDatabase(), { telegramUserId: first.id, chatId: first.id, displayName: "First" });
    expect(again).toMatchObject({ id: meA.id, created: false });
    await testDatabase().withUser(meA.id, (tx) =>
      tx.execute(sql`insert into entities (user_id, type, name, normalized_name) values (${meA.id}, 'book', 'Piranesi', 'piranesi')`),
    );
    const list = async (token: string) =>
      (
        (await (await call("/api/memories", { headers: { authorization: `Bearer ${token}` } })).json()) as {
          memories: Array<{ name: string }>;
        }
      ).memories.map((m) => m.name);
    expect(await list(a)).toEqual(["Piranesi"]);
    expect(await list(b)).toEqual([]);
  });

  it("refuses forged, other-bot, stale and user-less launches with a clear JSON error and no session", async () => {
    const user = telegramUser();
    const signed = await signedInitData(BOT, { user });
    const cases: Array<[string, number, RegExp]> = [
      [signed.replace(/auth_date=\d+/, `auth_date=${Math.floor(Date.now() / 1000) - 1}`), 401, /signature .* does not match this bot/],
      [await signedInitData("987654:other-bot", { user }), 401, /does not match this bot/],
      [await signedInitData(BOT, { user, authDate: hourAgo(30) }), 401, /more than 60 minutes old/],
      [await signedInitData(BOT, { user: null }), 401, /did not say who opened Soma/],
      ["not launch data", 400, /not launch data from Telegram/],
    ];
    for (const [initData, status, message] of cases) {
      const response = await launch(initData);
      expect(response.status, initData).toBe(status);
      expect(response.headers.get("set-cookie")).toBeNull();
      const body = (await response.json()) as { error: { message: string } };
      expect(body.error.message).toMatch(message);
      expect(JSON.stringify(body)).not.toContain(String(user.id));
    }
    const missing = await call("/auth/telegram/mini-app", {
      method: "POST",
      headers: { "content-type": "application/json", origin: "https://soma.test" },
      body: "{}",
    });
    expect(missing.status).toBe(400);
  });

  it("refuses a cross-site request, a server without Telegram, and a recently deleted account", async () => {
    const user = telegramUser();
    expect((await launch(await signedInitData(BOT, { user }), { origin: "https://evil.example" })).status).toBe(403);
    const unconfigured = await callWithEnv({ TELEGRAM_BOT_TOKEN: undefined }, "/auth/telegram/mini-app", {
      method: "POST",
      headers: { "content-type": "application/json", origin: "https://soma.test" },
      body: JSON.stringify({ initData: await signedInitData(BOT, { user }) }),
    });
    expect(unconfigured.status).toBe(404);
    const token = await bearerOf(await signedInitData(BOT, { user }));
    const deleted = await call("/api/account", {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}`, origin: "https://soma.test" },
    });
    expect(deleted.status).toBe(200);
    expect((await call("/api/me", { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);
    const refused = await launch(await signedInitData(BOT, { user }));
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain("was deleted");
    await expect(ensureTelegramPerson(testDatabase(), { telegramUserId: user.id, chatId: user.id, displayName: "Gone" })).rejects.toThrow(
      AccountDeletedError,
    );
  });

  it("never logs the launch data: no sink receives its signature, and the login counts as the Mini App's", async () => {
    const user = telegramUser("Logged");
    const initData = await signedInitData(BOT, { user });
    const token = await bearerOf(initData);
    await call("/api/me", { headers: { authorization: `Bearer ${token}` } });
    const hash = new URLSearchParams(initData).get("hash")!;
    const logins = await eventually(
      async () =>
        (await received("posthog"))
          .flatMap((r) => (JSON.parse(r.body) as { batch: Array<{ event: string; properties: { method?: string } }> }).batch)
          .filter((e) => e.event === "login" && e.properties.method === "mini-app"),
      (events) => events.length > 0,
    );
    expect(logins.length).toBeGreaterThan(0);
    const everything = JSON.stringify([...(await received("posthog")), ...(await received("axiom")), ...(await received("sentry"))]);
    for (const secret of [hash, token, "query_id", "tgWebAppData"]) expect(everything).not.toContain(secret);
  });

  it("a bearer that is not a session is refused like no session; the cookie still works beside it", async () => {
    expect((await call("/api/me", { headers: { authorization: "Bearer aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" } })).status).toBe(401);
    const person = await ensureTelegramPerson(testDatabase(), { telegramUserId: telegramUser().id, chatId: 5, displayName: "Cookie" });
    expect((await call("/api/me", { headers: { cookie: await sessionCookie(person) } })).status).toBe(200);
  });
});

describe("the Mini App's pages", () => {
  it("are served without a session, framed by Telegram's web client only; the web app's pages by no one", async () => {
    for (const path of ["/tg", "/tg/memories", "/tg/facts", "/tg/reminders", "/tg/settings"]) {
      const response = await call(path, { redirect: "manual" });
      expect(response.status, path).toBe(200);
      expect(response.headers.get("content-type")).toContain("text/html");
      const csp = response.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("frame-ancestors https://web.telegram.org");
      expect(response.headers.get("x-frame-options")).toBeNull();
      expect(await response.text()).not.toMatch(/displayName|Piranesi/);
    }
    const dev = await callWithEnv({ ENVIRONMENT: "development" }, "/tg");
    expect(dev.headers.get("content-security-policy")).toContain(
      "frame-ancestors https://web.telegram.org http://localhost:* http://127.0.0.1:*",
    );
    const web = await call("/app", { redirect: "manual" });
    expect(web.status).toBe(307);
    expect(web.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(web.headers.get("x-frame-options")).toBe("DENY");
  });
});
