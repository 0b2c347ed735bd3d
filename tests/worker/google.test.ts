// Guards Google sign-in and the Gmail connection: PKCE and state on the way out, the state checked
// and the verifier sent on the way back, tokens sealed at rest and bound to their row (finding 9a), a
// mailbox connected by one person only (finding 9g). Google's token endpoint is a stand-in.
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openConnection, saveConnection } from "../../db/repositories/connections";
import { SealedTokenError, TokenCipher, type TokenSlot } from "../../db/token-cipher";
import { call, chatAs, eventually, newPerson, sessionCookie, testDatabase } from "./helpers";

async function start(intent: string, cookie?: string) {
  const response = await call(`/auth/google/start?intent=${intent}`, { redirect: "manual", headers: cookie ? { cookie } : {} });
  const location = new URL(response.headers.get("location") ?? "", "https://soma.test");
  const flow = (response.headers.get("set-cookie") ?? "").split(";")[0]!;
  return { response, location, flow };
}

const slot = (userId: string, column: TokenSlot["column"]): TokenSlot => ({ userId, provider: "google", column });

interface ConnectionRow {
  account_email: string;
  access_token_enc: string;
  refresh_token_enc: string | null;
  gmail_history_id: string | null;
  watch_expires_at: string | null;
}

async function connectionRow(userId: string): Promise<ConnectionRow | undefined> {
  const rows = (await testDatabase().withUser(userId, (tx) =>
    tx.execute(
      sql`select account_email, access_token_enc, refresh_token_enc, gmail_history_id, watch_expires_at::text from oauth_connections`,
    ),
  )) as unknown as ConnectionRow[];
  return rows[0];
}

/** Goes through "Connect Gmail" as the person with `cookie`, coming back from Google as account `sub`. */
async function connectGmailAs(cookie: string, sub: string, headers: Record<string, string> = {}): Promise<Response> {
  const { location, flow } = await start("connect", cookie);
  return call(`/auth/google/callback?code=good-${sub}&state=${location.searchParams.get("state")}`, {
    headers: { cookie: `${flow}; ${cookie}`, ...headers },
    redirect: "manual",
  });
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
    const session = (back.headers.getSetCookie().find((c) => c.startsWith("__Host-soma_session=")) ?? "").split(";")[0]!;
    expect(await chatAs(session, "I read Hyperion")).toBe("Noted: Hyperion (book). I'll remember it.");

    const requests = (await (await fetch(`${env.STAND_IN_URL}/__google`)).json()) as Array<Record<string, string>>;
    expect(requests.at(-1)).toMatchObject({
      grant_type: "authorization_code",
      code: `good-${sub}`,
      code_verifier: expect.stringMatching(/^[\w-]{43,}$/),
    });
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
    expect(await cipher.decrypt(row!.access_token_enc, slot(person.id, "access_token"))).toBe(`ya29.access-${sub}`);
    expect(await cipher.decrypt(row!.refresh_token_enc, slot(person.id, "refresh_token"))).toBe(`1//refresh-${sub}`);

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
    const requests = (await (await fetch(`${env.STAND_IN_URL}/__gmail/requests?sub=${sub}`)).json()) as Array<{
      method: string;
      path: string;
    }>;
    expect(requests).toContainEqual(expect.objectContaining({ method: "POST", path: "/watch" }));
  });
});

describe("finding 9a: sealed tokens are bound to their row", () => {
  const cipher = new TokenCipher(env.TOKEN_ENCRYPTION_KEY);

  it("9a: a sealed token moved to another row does not decrypt", async () => {
    const alice = await newPerson("alice");
    const sub = crypto.randomUUID();
    await fetch(`${env.STAND_IN_URL}/__gmail/mailbox`, { method: "POST", body: JSON.stringify({ sub, historyId: 100 }) });
    expect((await connectGmailAs(await sessionCookie(alice), sub)).status).toBe(303);
    const sealed = (await connectionRow(alice.id))!;
    expect(sealed.access_token_enc).toMatch(/^v2\./);
    const opened = await testDatabase().withUser(alice.id, (tx) => openConnection(tx, alice.id, "google", cipher));
    expect(opened!.tokens).toEqual({ accessToken: `ya29.access-${sub}`, refreshToken: `1//refresh-${sub}` });

    // Mallory's row gets Alice's sealed tokens (a copied row, a swapped column): none of them opens.
    const mallory = await newPerson("mallory");
    const moved = {
      provider: "google",
      accountEmail: `m-${sub}@gmail.example`,
      scope: "gmail.readonly",
      accessTokenExpiresAt: null,
    } as const;
    await testDatabase().withUser(mallory.id, (tx) =>
      saveConnection(tx, mallory.id, { ...moved, accessTokenEnc: sealed.access_token_enc, refreshTokenEnc: sealed.refresh_token_enc }),
    );
    await expect(testDatabase().withUser(mallory.id, (tx) => openConnection(tx, mallory.id, "google", cipher))).rejects.toBeInstanceOf(
      SealedTokenError,
    );
    await expect(cipher.decrypt(sealed.access_token_enc, slot(alice.id, "refresh_token"))).rejects.toThrow(/does not open here/);
    await expect(cipher.decrypt(sealed.refresh_token_enc!, slot(mallory.id, "refresh_token"))).rejects.toBeInstanceOf(SealedTokenError);
  });

  it("9a: a legacy token sealed without AAD still opens, and is re-sealed bound to its row on that first read", async () => {
    const person = await newPerson("legacy");
    const key = await crypto.subtle.importKey(
      "raw",
      Uint8Array.from(atob(env.TOKEN_ENCRYPTION_KEY), (c) => c.charCodeAt(0)),
      "AES-GCM",
      false,
      ["encrypt"],
    );
    const b64url = (bytes: Uint8Array) =>
      btoa(String.fromCharCode(...bytes))
        .replaceAll("+", "-")
        .replaceAll("/", "_")
        .replace(/=+$/, "");
    const sealV1 = async (plaintext: string) => {
      const iv = crypto.getRandomValues(new Uint8Array(12));
      return `v1.${b64url(iv)}.${b64url(new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, new TextEncoder().encode(plaintext))))}`;
    };
    const legacy = { accessTokenEnc: await sealV1("ya29.legacy-access"), refreshTokenEnc: await sealV1("1//legacy-refresh") };
    await testDatabase().withUser(person.id, (tx) =>
      saveConnection(tx, person.id, {
        provider: "google",
        accountEmail: `legacy-${person.id}@gmail.example`,
        scope: "gmail.readonly",
        accessTokenExpiresAt: null,
        ...legacy,
      }),
    );

    const opened = await testDatabase().withUser(person.id, (tx) => openConnection(tx, person.id, "google", cipher));
    expect(opened!.tokens).toEqual({ accessToken: "ya29.legacy-access", refreshToken: "1//legacy-refresh" });
    const resealed = (await connectionRow(person.id))!;
    expect(resealed.access_token_enc).toMatch(/^v2\./);
    expect(resealed.refresh_token_enc).toMatch(/^v2\./);
    expect(await cipher.decrypt(resealed.access_token_enc, slot(person.id, "access_token"))).toBe("ya29.legacy-access");
    expect(await cipher.decrypt(resealed.refresh_token_enc!, slot(person.id, "refresh_token"))).toBe("1//legacy-refresh");
    await expect(cipher.decrypt(resealed.access_token_enc, slot(crypto.randomUUID(), "access_token"))).rejects.toBeInstanceOf(
      SealedTokenError,
    );
  });
});

describe("finding 9g: a mailbox belongs to one person", () => {
  it("9g: connecting a mailbox another person already connected is refused, and nothing of theirs changes", async () => {
    const owner = await newPerson("mailbox-owner");
    const sub = crypto.randomUUID();
    await fetch(`${env.STAND_IN_URL}/__gmail/mailbox`, { method: "POST", body: JSON.stringify({ sub, historyId: 4242 }) });
    expect((await connectGmailAs(await sessionCookie(owner), sub)).status).toBe(303);
    const before = await eventually(
      () => connectionRow(owner.id),
      (row) => row?.watch_expires_at != null,
    );

    const other = await newPerson("mailbox-other");
    const otherCookie = await sessionCookie(other);
    const page = await connectGmailAs(otherCookie, sub, { accept: "text/html" });
    expect(page.status).toBe(409);
    expect(await page.text()).toContain(`${sub}@gmail.example is already connected to another Soma account`);
    const api = await connectGmailAs(otherCookie, sub.toUpperCase());
    expect(api.status).toBe(409);
    expect(((await api.json()) as { error: { code: string } }).error.code).toBe("conflict");

    expect(await connectionRow(other.id)).toBeUndefined();
    expect(await connectionRow(owner.id)).toEqual(before);
    // The owner reconnecting their own mailbox is still fine.
    expect((await connectGmailAs(await sessionCookie(owner), sub)).headers.get("location")).toBe("/app/settings");
  });

  it("9g: two people connecting one mailbox at the same moment: one gets it, the other 409, one row", async () => {
    const sub = crypto.randomUUID();
    await fetch(`${env.STAND_IN_URL}/__gmail/mailbox`, { method: "POST", body: JSON.stringify({ sub, historyId: 7 }) });
    const people = await Promise.all(Array.from({ length: 4 }, (_, i) => newPerson(`racer-${i}`)));
    const cookies = await Promise.all(people.map((p) => sessionCookie(p)));
    const statuses = (await Promise.all(cookies.map((cookie) => connectGmailAs(cookie, sub)))).map((r) => r.status).sort();
    expect(statuses).toEqual([303, 409, 409, 409]);
    const rows = await Promise.all(people.map((p) => connectionRow(p.id)));
    expect(rows.filter(Boolean)).toHaveLength(1);
  });
});
