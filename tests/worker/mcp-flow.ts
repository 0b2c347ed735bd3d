// The MCP OAuth flow as a client and a person go through it, against the real Worker: dynamic
// registration, the consent page (signed in, Allow or Deny), the code exchange with PKCE, and the
// official MCP client over the Worker's fetch with the access token.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { exports } from "cloudflare:workers";
import { call } from "./helpers";

export const ORIGIN = "https://soma.test";
export const REDIRECT_URI = "http://127.0.0.1:33418/callback";

export interface RegisteredClient {
  client_id: string;
  client_name: string;
  redirect_uris: string[];
}

/**
 * A client address of its own for each request to a door limited per address (registration, /authorize:
 * 20 a minute each, worker/mcp/oauth.ts), as different people's browsers and apps would have.
 */
function fromSomewhere(headers: Record<string, string> = {}): Record<string, string> {
  const octet = () => Math.floor(Math.random() * 256);
  return { ...headers, "cf-connecting-ip": `10.${octet()}.${octet()}.${octet()}` };
}

/** RFC 7591 registration of a public client (token_endpoint_auth_method none), as MCP clients do. */
export async function registerClient(name = "Test App", redirectUris = [REDIRECT_URI]): Promise<RegisteredClient> {
  const response = await call("/oauth/register", {
    method: "POST",
    headers: fromSomewhere({ "content-type": "application/json" }),
    body: JSON.stringify({
      client_name: name,
      redirect_uris: redirectUris,
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    }),
  });
  if (response.status !== 201) throw new Error(`registration: ${response.status} ${await response.text()}`);
  return (await response.json()) as RegisteredClient;
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
}

export async function pkcePair(): Promise<{ verifier: string; challenge: string }> {
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
  return { verifier, challenge };
}

export function authorizeUrl(client: RegisteredClient, challenge: string, scope: string, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: client.redirect_uris[0] ?? REDIRECT_URI,
    scope,
    state: "state-123",
    code_challenge: challenge,
    code_challenge_method: "S256",
    resource: `${ORIGIN}/mcp`,
    ...extra,
  });
  return `/authorize?${params}`;
}

/** The consent page for `cookie`'s person: its HTML, the form's handle and the consent cookie. */
export async function openConsent(
  url: string,
  cookie: string,
): Promise<{ status: number; html: string; handle: string | null; consentCookie: string }> {
  const response = await call(url, { headers: fromSomewhere({ cookie }), redirect: "manual" });
  const html = await response.text();
  const handle = /name="handle" value="([^"]+)"/.exec(html)?.[1] ?? null;
  const consentCookie = response.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
  return { status: response.status, html, handle, consentCookie };
}

/** Posts the consent form: Allow (with the scopes ticked) or Deny. Answers where the browser goes next. */
export async function decide(
  cookie: string,
  consent: { handle: string | null; consentCookie: string },
  decision: "approve" | "deny",
  scopes: string[] = ["memory:read"],
): Promise<{ status: number; location: string | null; html: string }> {
  const form = new URLSearchParams({ handle: consent.handle ?? "", decision });
  for (const scope of scopes) form.append("scope", scope);
  const response = await call("/authorize", {
    method: "POST",
    headers: fromSomewhere({
      cookie: `${cookie}; ${consent.consentCookie}`,
      origin: ORIGIN,
      "content-type": "application/x-www-form-urlencoded",
    }),
    body: form,
    redirect: "manual",
  });
  const html = await response.text();
  const location = /href="([^"]+)" id="continue"/.exec(html)?.[1]?.replaceAll("&amp;", "&") ?? null;
  return { status: response.status, location, html };
}

export async function tokenRequest(params: Record<string, string>): Promise<Response> {
  return call("/oauth/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(params),
  });
}

interface Tokens {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  scope: string;
}

/** The whole flow for `cookie`'s person: a registered client, consent with `scopes`, tokens. */
export async function connectApp(cookie: string, scopes: string[] = ["memory:read", "memory:write"], name = "Test App") {
  const client = await registerClient(name);
  const { verifier, challenge } = await pkcePair();
  const consent = await openConsent(authorizeUrl(client, challenge, scopes.join(" ")), cookie);
  const decision = await decide(cookie, consent, "approve", scopes);
  const code = new URL(decision.location ?? "http://x/").searchParams.get("code");
  if (!code) throw new Error(`no code: ${decision.status} ${decision.html.slice(0, 300)}`);
  const response = await tokenRequest({
    grant_type: "authorization_code",
    code,
    redirect_uri: REDIRECT_URI,
    client_id: client.client_id,
    code_verifier: verifier,
    resource: `${ORIGIN}/mcp`,
  });
  if (response.status !== 200) throw new Error(`token: ${response.status} ${await response.text()}`);
  return { client, code, verifier, tokens: (await response.json()) as Tokens };
}

/** The official MCP client, connected to the Worker's /mcp with `accessToken`. */
export async function mcpClient(accessToken: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${ORIGIN}/mcp`), {
    fetch: (url, init) => exports.default.fetch(new Request(url, init)),
    requestInit: { headers: { authorization: `Bearer ${accessToken}` } },
  });
  const client = new Client({ name: "soma-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}
