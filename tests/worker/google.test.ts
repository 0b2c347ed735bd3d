// Guards Google sign-in and the Gmail connection: PKCE and state on the way out, the state checked
// and the verifier sent on the way back, tokens sealed at rest. Google's token endpoint is a stand-in.
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { TokenCipher } from "../../db/token-cipher";
import { call, chatAs, eventually, newPerson, sessionCookie, testDatabase } from "./helpers";

async function start(intent: string, cookie?: string) {
  const response = await call(`/auth/google/start?intent=${intent}`, { redirect: "manual", headers: cookie ? { cookie } : {} });
  const location = new URL(response.headers.get("location") ?? "", "https://soma.test");
  const flow = (response.headers.get("set-cookie") ?? "").split(";")[0]!;
  return { response, location, flow };
}

describe("Google sign-in", () => {
  it("redirects to Google with PKCE (S256) and a state, then signs in on the way back", async () => {
    const { response, location, flow } = await start("signin");
    expect(response.status).toBe(302);
    expect(location.origin + location.pathname).toBe(`${env.STAND_IN_URL}/google/auth`);
    expect(location.searchParams.get("code_challenge_method")).toBe("S256");
    expect(location.searchParams.get("code_challenge")).toMatch(/^[\w-]{43}$/);
    expect(location.searchParams.get("scope")).toBe("openid email profile");
    expect(location.searchParams.get("redirect_uri")).toBe("https://soma.test/auth/google/callback");
    const state = location.searchParams.get("state")!;

    const sub = crypto.randomUUID();
    const back = await call(`/auth/google/callback?code=good-${sub}&state=${state}`, { headers: { cookie: flow }, redirect: "manual" });
    expect(back.status).toBe(303);
    expect(back.headers.get("location")).toBe("/app");
    const session = (back.headers.getSetCookie().find((c) => c.startsWith("soma_session=")) ?? "").split(";")[0]!;
    expect(await chatAs(session, "I read Hyperion")).toBe("Noted: Hyperion (book). I'll remember it.");

    const requests = (await (await fetch(`${env.STAND_IN_URL}/__google`)).json()) as Array<Record<string, string>>;
    expect(requests.at(-1)).toMatchObject({ grant_type: "authorization_code", code: `good-${sub}`, code_verifier: expect.stringMatching(/^[\w-]{43,}$/) });
  });

  it("refuses a wrong state, a missing flow cookie, and a code Google rejects", async () => {
    const { location, flow } = await start("signin");
    const state = location.searchParams.get("state")!;
    expect((await call(`/auth/google/callback?code=good-x&state=${state}x`, { headers: { cookie: flow } })).status).toBe(400);
    expect((await call(`/auth/google/callback?code=good-x&state=${state}`)).status).toBe(400);
    expect((await call(`/auth/google/callback?code=bad&state=${state}`, { headers: { cookie: flow } })).status).toBe(401);
  });
});

describe("connecting Gmail", () => {
  it("asks for gmail.readonly offline, and keeps the tokens sealed with TOKEN_ENCRYPTION_KEY", async () => {
    const person = await newPerson();
    const cookie = await sessionCookie(person);
    expect((await start("connect")).response.headers.get("location")).toBe("/login");

    const { location, flow } = await start("connect", cookie);
    expect(location.searchParams.get("scope")).toContain("https://www.googleapis.com/auth/gmail.readonly");
    expect(location.searchParams.get("access_type")).toBe("offline");
    const sub = crypto.randomUUID();
    await fetch(`${env.STAND_IN_URL}/__gmail/mailbox`, { method: "POST", body: JSON.stringify({ sub, historyId: 31337 }) });
    const back = await call(`/auth/google/callback?code=good-${sub}&state=${location.searchParams.get("state")}`, {
      headers: { cookie: `${flow}; ${cookie}` },
      redirect: "manual",
    });
    expect(back.headers.get("location")).toBe("/app/settings");

    const [row] = (await testDatabase().withUser(person.id, (tx) =>
      tx.execute(sql`select account_email, access_token_enc, refresh_token_enc from oauth_connections where provider = 'google'`),
    )) as unknown as Array<{ account_email: string; access_token_enc: string; refresh_token_enc: string }>;
    expect(row!.account_email).toBe(`${sub}@gmail.example`);
    expect(row!.access_token_enc).not.toContain("ya29");
    const cipher = new TokenCipher(env.TOKEN_ENCRYPTION_KEY);
    expect(await cipher.decrypt(row!.access_token_enc)).toBe(`ya29.access-${sub}`);
    expect(await cipher.decrypt(row!.refresh_token_enc)).toBe(`1//refresh-${sub}`);

    const me = (await (await call("/api/me", { headers: { cookie } })).json()) as { google: { connected: boolean } };
    expect(me.google.connected).toBe(true);

    // The mailbox is watched right away: Gmail's users.watch on the topic, the position and expiry kept.
    const [state] = await eventually(
      async () =>
        (await testDatabase().withUser(person.id, (tx) =>
          tx.execute(sql`select gmail_history_id, watch_expires_at is not null as watching from oauth_connections`),
        )) as unknown as Array<{ gmail_history_id: string | null; watching: boolean }>,
      (rows) => rows[0]?.watching === true,
    );
    expect(state).toEqual({ gmail_history_id: "31337", watching: true });
    const requests = (await (await fetch(`${env.STAND_IN_URL}/__gmail/requests?sub=${sub}`)).json()) as Array<{ method: string; path: string }>;
    expect(requests).toContainEqual(expect.objectContaining({ method: "POST", path: "/watch" }));
  });
});
