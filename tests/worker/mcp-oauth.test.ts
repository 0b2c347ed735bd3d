// Guards "standard MCP clients connect to /mcp with nothing but the URL, and only with the person's consent":
// a 401 that points at RFC 9728 metadata, RFC 8414 metadata, registration, PKCE S256 only, the consent page
// (signed in first, the app's name escaped, Deny, CSRF), codes that work once, refresh, bad tokens refused.
import { describe, expect, it } from "vitest";
import { call, newPerson, sessionCookie } from "./helpers";
import {
  authorizeUrl,
  connectApp,
  decide,
  mcpClient,
  ORIGIN,
  openConsent,
  pkcePair,
  REDIRECT_URI,
  registerClient,
  tokenRequest,
} from "./mcp-flow";

describe("discovery", () => {
  it("answers /mcp without a token with 401 and a Bearer challenge naming the resource metadata", async () => {
    const response = await call("/mcp", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(response.status).toBe(401);
    const challenge = response.headers.get("www-authenticate") ?? "";
    expect(challenge).toMatch(/^Bearer /);
    expect(challenge).toContain(`resource_metadata="${ORIGIN}/.well-known/oauth-protected-resource/mcp"`);
    // Both scopes, so a standard client asks for read and write (the person may untick write).
    expect(challenge).toContain('scope="memory:read memory:write"');
  });

  it("publishes protected-resource metadata (RFC 9728) and authorization-server metadata (RFC 8414)", async () => {
    const resource = await call("/.well-known/oauth-protected-resource/mcp");
    expect(resource.status).toBe(200);
    const rm = (await resource.json()) as Record<string, unknown>;
    expect(rm).toMatchObject({
      resource: `${ORIGIN}/mcp`,
      authorization_servers: [ORIGIN],
      scopes_supported: ["memory:read", "memory:write"],
    });

    const server = await call("/.well-known/oauth-authorization-server");
    expect(server.status).toBe(200);
    const as = (await server.json()) as Record<string, unknown>;
    expect(as).toMatchObject({
      issuer: ORIGIN,
      authorization_endpoint: `${ORIGIN}/authorize`,
      token_endpoint: `${ORIGIN}/oauth/token`,
      registration_endpoint: `${ORIGIN}/oauth/register`,
      code_challenge_methods_supported: ["S256"],
    });
    expect(as.scopes_supported).toEqual(expect.arrayContaining(["memory:read", "memory:write", "offline_access"]));
    expect(as.response_types_supported).toEqual(["code"]);
    expect(as.client_id_metadata_document_supported).toBe(true);
  });

  it("leaves the rest of the Worker as it was", async () => {
    expect((await call("/api/health")).status).not.toBe(401);
    const chat = await call("/api/chat", { method: "POST", redirect: "manual" });
    expect(chat.status).toBe(307);
    expect(chat.headers.get("location")).toBe("/login");
  });
});

describe("registration and consent", () => {
  it("registers a client and refuses one with a remote http redirect URI", async () => {
    const client = await registerClient("Claude");
    expect(client.client_id).toBeTruthy();
    const bad = await call("/oauth/register", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_name: "Evil", redirect_uris: ["http://evil.example/cb"], token_endpoint_auth_method: "none" }),
    });
    expect(bad.status).toBe(400);
  });

  it("answers a client ID metadata document that cannot be fetched here, never redirecting", async () => {
    const person = await newPerson("cimd");
    const { challenge } = await pkcePair();
    const url = `/authorize?${new URLSearchParams({
      response_type: "code",
      client_id: "https://app.invalid/oauth/client.json",
      redirect_uri: "https://app.invalid/callback",
      state: "s",
      code_challenge: challenge,
      code_challenge_method: "S256",
    })}`;
    const response = await call(url, { headers: { cookie: await sessionCookie(person) }, redirect: "manual" });
    expect(response.status).toBe(400);
    expect(response.headers.get("location")).toBeNull();
    expect(await response.text()).toContain("could not be verified");
  });

  it("sends a signed-out person to sign in, and back to the consent page afterwards", async () => {
    const client = await registerClient();
    const { challenge } = await pkcePair();
    const url = authorizeUrl(client, challenge, "memory:read");
    const response = await call(url, { redirect: "manual" });
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe("/login");
    const back = response.headers.getSetCookie().find((c) => c.startsWith("__Host-soma_return="));
    expect(decodeURIComponent(back?.split(";")[0]?.split("=").slice(1).join("=") ?? "")).toBe(url);
  });

  it("shows the app's registered name escaped, where access goes, and both choices", async () => {
    const person = await newPerson("consent");
    const cookie = await sessionCookie(person);
    const client = await registerClient('<script>alert("x")</script> Notes');
    const { challenge } = await pkcePair();
    const consent = await openConsent(authorizeUrl(client, challenge, "memory:read"), cookie);
    expect(consent.status).toBe(200);
    expect(consent.html).not.toContain("<script>alert");
    expect(consent.html).toContain("&lt;script&gt;");
    expect(consent.html).toContain("127.0.0.1");
    expect(consent.html).toContain('value="approve"');
    expect(consent.html).toContain('value="deny"');
    expect(consent.html).toContain("not verified");
    // Write is offered but not pre-ticked when the app asked only to read.
    expect(consent.html).toMatch(/value="memory:write"\s*\/>/);
  });

  it("refuses a redirect URI the client did not register, without redirecting to it", async () => {
    const person = await newPerson("consent");
    const client = await registerClient();
    const { challenge } = await pkcePair();
    const url = authorizeUrl(client, challenge, "memory:read", { redirect_uri: "http://127.0.0.1:9/elsewhere" });
    const response = await call(url, { headers: { cookie: await sessionCookie(person) }, redirect: "manual" });
    expect(response.status).toBe(400);
    expect(response.headers.get("location")).toBeNull();
  });

  it("refuses plain PKCE and a request without PKCE", async () => {
    const person = await newPerson("consent");
    const cookie = await sessionCookie(person);
    const client = await registerClient();
    const plain = await call(authorizeUrl(client, "a".repeat(43), "memory:read", { code_challenge_method: "plain" }), {
      headers: { cookie },
      redirect: "manual",
    });
    const none = await call(
      `/authorize?${new URLSearchParams({ response_type: "code", client_id: client.client_id, redirect_uri: REDIRECT_URI, state: "s" })}`,
      { headers: { cookie }, redirect: "manual" },
    );
    for (const response of [plain, none]) {
      const location = response.headers.get("location");
      // Either shown here or sent back to the registered redirect URI with an error, never a code.
      if (location) expect(new URL(location).searchParams.get("error")).toBe("invalid_request");
      else expect(response.status).toBe(400);
    }
  });

  it("Deny sends the app back with access_denied", async () => {
    const person = await newPerson("deny");
    const cookie = await sessionCookie(person);
    const client = await registerClient();
    const { challenge } = await pkcePair();
    const consent = await openConsent(authorizeUrl(client, challenge, "memory:read"), cookie);
    const denied = await decide(cookie, consent, "deny");
    const back = new URL(denied.location ?? "http://x/");
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT_URI);
    expect(back.searchParams.get("error")).toBe("access_denied");
    expect(back.searchParams.get("code")).toBeNull();
  });

  it("refuses a forged decision: from another site, without the consent cookie, or signed out", async () => {
    const person = await newPerson("csrf");
    const cookie = await sessionCookie(person);
    const client = await registerClient();
    const { challenge } = await pkcePair();
    const consent = await openConsent(authorizeUrl(client, challenge, "memory:read"), cookie);
    const form = new URLSearchParams({ handle: consent.handle ?? "", decision: "approve", scope: "memory:read" });
    const crossSite = await call("/authorize", {
      method: "POST",
      headers: {
        cookie: `${cookie}; ${consent.consentCookie}`,
        origin: "https://evil.example",
        "content-type": "application/x-www-form-urlencoded",
      },
      body: form,
    });
    expect(crossSite.status).toBe(403);
    const noConsentCookie = await decide(cookie, { handle: consent.handle, consentCookie: "" }, "approve");
    expect(noConsentCookie.status).toBe(400);
    expect(noConsentCookie.location).toBeNull();
    const signedOut = await decide("x=1", consent, "approve");
    expect(signedOut.status).toBe(401);
  });
});

describe("tokens", () => {
  it("refreshes with rotation, and refuses bad tokens", async () => {
    const person = await newPerson("tokens");
    const { client, tokens } = await connectApp(await sessionCookie(person), ["memory:read"]);
    expect(tokens.expires_in).toBeLessThanOrEqual(3600);
    expect(tokens.scope).toBe("memory:read");
    expect(tokens.refresh_token).toBeTruthy();

    const refreshed = await tokenRequest({ grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: client.client_id });
    expect(refreshed.status).toBe(200);
    const next = (await refreshed.json()) as { access_token: string; refresh_token: string };
    expect(next.access_token).not.toBe(tokens.access_token);
    expect(next.refresh_token).not.toBe(tokens.refresh_token);
    const tools = await (await mcpClient(next.access_token)).listTools();
    expect(tools.tools.length).toBeGreaterThan(0);

    for (const bad of ["nonsense", `${next.access_token}x`, `${person.id}:nogrant:secret`]) {
      const response = await call("/mcp", {
        method: "POST",
        headers: { authorization: `Bearer ${bad}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toContain("invalid_token");
    }
  });

  it("refuses a replayed code, and the replay revokes what the code gave", async () => {
    const person = await newPerson("replay");
    const { client, code, verifier, tokens } = await connectApp(await sessionCookie(person), ["memory:read"]);
    const replay = await tokenRequest({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT_URI,
      client_id: client.client_id,
      code_verifier: verifier,
    });
    expect(replay.status).toBe(400);
    expect(((await replay.json()) as { error: string }).error).toBe("invalid_grant");
    const refresh = await tokenRequest({ grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: client.client_id });
    expect(refresh.status).toBe(400);
    const use = await call("/mcp", { method: "POST", headers: { authorization: `Bearer ${tokens.access_token}` }, body: "{}" });
    expect(use.status).toBe(401);
  });

  it("refuses a code exchanged with the wrong verifier", async () => {
    const person = await newPerson("pkce");
    const cookie = await sessionCookie(person);
    const client = await registerClient();
    const { challenge } = await pkcePair();
    const consent = await openConsent(authorizeUrl(client, challenge, "memory:read"), cookie);
    const approved = await decide(cookie, consent, "approve");
    const code = new URL(approved.location ?? "http://x/").searchParams.get("code") ?? "";
    const wrong = await tokenRequest({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT_URI,
      client_id: client.client_id,
      code_verifier: (await pkcePair()).verifier,
    });
    expect(wrong.status).toBe(400);
  });
});
