// Google sign-in and the Gmail connection: OAuth 2.0 authorization code flow with PKCE (arctic).
//   GET /auth/google/start?intent=signin   sign in (openid email profile)
//   GET /auth/google/start?intent=connect  signed in: also gmail.readonly, offline, tokens kept sealed
//   GET /auth/google/callback              state checked in constant time, code exchanged with the verifier
// The state and verifier live in a short-lived HttpOnly cookie scoped to /auth/google.
import { CodeChallengeMethod, decodeIdToken, generateCodeVerifier, generateState, OAuth2Client, type OAuth2Tokens } from "arctic";
import { Hono, type Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { z } from "zod";
import { logJson } from "../../platform/log";
import { renewWatches } from "../../agents/workflows/functions/mail-watch-renew";
import { ensureGooglePerson } from "../../db/repositories/auth";
import { MailboxTakenError, saveConnection } from "../../db/repositories/connections";
import { TokenCipher, type TokenSlot } from "../../db/token-cipher";
import { refuseSignIn } from "../auth/refusal";
import { secretsEqual } from "../auth/secrets";
import { afterSignIn } from "../auth/return-to";
import { sessionPerson, startSession } from "../auth/session";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";

const FLOW_COOKIE = "soma_google_flow";
const FLOW_TTL_SECONDS = 600;
const SIGN_IN_SCOPES = ["openid", "email", "profile"];
const GMAIL_SCOPE = "https://www.googleapis.com/auth/gmail.readonly";

const Flow = z.object({ state: z.string(), verifier: z.string(), intent: z.enum(["signin", "connect"]) });
const IdClaims = z.looseObject({ sub: z.string(), email: z.string().optional(), name: z.string().optional() });

function client(c: Context<AppEnv>): OAuth2Client {
  const { GOOGLE_CLIENT_ID: id, GOOGLE_CLIENT_SECRET: secret, APP_BASE_URL: base } = c.var.config;
  if (!id || !secret) throw new ApiError("not_found", "Google sign-in is not configured.");
  const origin = base ?? new URL(c.req.url).origin;
  return new OAuth2Client(id, secret, `${origin.replace(/\/$/, "")}/auth/google/callback`);
}

export const google = new Hono<AppEnv>()
  .get("/start", async (c) => {
    const intent = c.req.query("intent") === "connect" ? "connect" : "signin";
    if (intent === "connect" && !(await sessionPerson(c))) return c.redirect("/login", 302);
    const oauth = client(c);
    const state = generateState();
    const verifier = generateCodeVerifier();
    const scopes = intent === "connect" ? [...SIGN_IN_SCOPES, GMAIL_SCOPE] : SIGN_IN_SCOPES;
    const url = oauth.createAuthorizationURLWithPKCE(c.var.config.GOOGLE_AUTH_URL, state, CodeChallengeMethod.S256, verifier, scopes);
    if (intent === "connect") {
      url.searchParams.set("access_type", "offline"); // a refresh token, for mail intake while the person is away
      url.searchParams.set("prompt", "consent");
    }
    setCookie(c, FLOW_COOKIE, JSON.stringify({ state, verifier, intent }), {
      httpOnly: true,
      secure: true,
      sameSite: "Lax",
      path: "/auth/google",
      maxAge: FLOW_TTL_SECONDS,
    });
    return c.redirect(url.toString(), 302);
  })
  .get("/callback", async (c) => {
    const flow = Flow.safeParse(safeJson(getCookie(c, FLOW_COOKIE)));
    deleteCookie(c, FLOW_COOKIE, { path: "/auth/google", secure: true });
    const code = c.req.query("code");
    if (!flow.success || !code || !(await secretsEqual(c.req.query("state"), flow.data.state))) {
      throw new ApiError("bad_request", "This Google sign-in expired or did not start here. Try again from the sign-in page.");
    }
    let tokens: OAuth2Tokens;
    try {
      tokens = await client(c).validateAuthorizationCode(c.var.config.GOOGLE_TOKEN_URL, code, flow.data.verifier);
    } catch {
      throw new ApiError("unauthorized", "Google did not accept this sign-in. Try again.");
    }
    // The ID token comes straight from Google's token endpoint over TLS, so its claims need no
    // signature check here (OpenID Connect Core 3.1.3.7).
    const claims = IdClaims.parse(decodeIdToken(tokens.idToken()));

    if (flow.data.intent === "signin") {
      const person = await ensureGooglePerson(c.var.db, {
        sub: claims.sub,
        email: claims.email ?? null,
        displayName: claims.name ?? claims.email ?? "",
      });
      if (person.created) c.var.telemetry.capture({ event: "user_signed_up", userId: person.id, properties: { channel: "google" } });
      await startSession(c, person.id, "google");
      return c.redirect(afterSignIn(c), 303);
    }

    const person = await sessionPerson(c);
    if (!person) return c.redirect("/login", 302);
    const key = c.var.config.TOKEN_ENCRYPTION_KEY;
    if (!key) throw new ApiError("config_invalid", "TOKEN_ENCRYPTION_KEY is not set.");
    const email = claims.email ?? null;
    const cipher = new TokenCipher(key);
    const slot = (column: TokenSlot["column"]) => ({ userId: person.id, provider: "google", column }) as const;
    try {
      await c.var.db.withUser(person.id, async (tx) =>
        saveConnection(tx, person.id, {
          provider: "google",
          accountEmail: email,
          scope: tokens.hasScopes() ? tokens.scopes().join(" ") : GMAIL_SCOPE,
          accessTokenEnc: await cipher.encrypt(tokens.accessToken(), slot("access_token")),
          refreshTokenEnc: tokens.hasRefreshToken() ? await cipher.encrypt(tokens.refreshToken(), slot("refresh_token")) : null,
          accessTokenExpiresAt: tokens.accessTokenExpiresAt(),
        }),
      );
    } catch (error) {
      // A mailbox has one owner: its mail pushes are routed to them (mailboxOwner). Connecting it a second
      // time from another account is refused by a unique index, and nothing of the owner's connection changes.
      if (!(error instanceof MailboxTakenError)) throw error;
      return refuseSignIn(
        c,
        "conflict",
        `${error.email} is already connected to another Soma account. Disconnect it there first, or connect a different mailbox.`,
        {
          href: "/app/settings",
          label: "Back to settings",
        },
      );
    }
    // Start the mailbox's push notifications now rather than at the next daily renewal.
    if (c.var.config.GMAIL_PUBSUB_TOPIC) {
      c.executionCtx.waitUntil(
        renewWatches({ config: c.var.config, db: c.var.db }, [person.id]).then(([result]) =>
          logJson(result?.ok ? "info" : "warn", {
            route: "google",
            requestId: c.var.requestId,
            gmailWatch: result?.ok ? "started" : result?.error,
          }),
        ),
      );
    }
    return c.redirect("/app/settings", 303);
  });

function safeJson(text: string | undefined): unknown {
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}
