// OAuth 2.1 for the MCP server, as the MCP authorization spec asks (@cloudflare/workers-oauth-provider):
// RFC 9728 protected-resource metadata for /mcp, RFC 8414 authorization-server metadata, dynamic client
// registration (RFC 7591), the authorization code with PKCE S256 only, short-lived access tokens and
// rotating refresh tokens, all kept in the OAUTH_KV namespace (hashes only; a grant's props encrypted).
// The provider sits in front of the whole Worker: it answers its own endpoints, lets a /mcp request
// through only with a valid token (else 401 with `WWW-Authenticate: Bearer resource_metadata=…`), and
// hands every other request to the Hono app unchanged. /authorize (the consent page) is Soma's own:
// worker/routes/authorize.ts.
//
// The issuer and the resource are this deployment's origin: APP_BASE_URL where set (production, and
// `npm start`, which sets it to its loopback URL), else the request's own origin. The provider takes
// them at construction, so there is one per origin, made once per isolate.
import { getOAuthApi, OAuthProvider, type OAuthHelpers, type OAuthProviderOptions } from "@cloudflare/workers-oauth-provider";
import { loadConfig } from "../../platform/config";

/** Read memories (search, list, get, the profile). What every connection asks for first. */
export const READ_SCOPE = "memory:read";
/** Add, correct and forget memories. Granted only when the person leaves it ticked on the consent page. */
export const WRITE_SCOPE = "memory:write";
const SCOPES = [READ_SCOPE, WRITE_SCOPE] as const;

/** Access tokens live an hour; the refresh token (rotated on use) keeps a connection for 30 days idle. */
const ACCESS_TOKEN_SECONDS = 60 * 60;
const REFRESH_IDLE_SECONDS = 30 * 24 * 60 * 60;

export const MCP_PATH = "/mcp";
const AUTHORIZE_PATH = "/authorize";

/** What a grant carries to every /mcp request (ctx.props), encrypted at rest by the provider. */
export interface GrantProps {
  userId: string;
  /** The app's name as it registered itself, for the source of what it writes. */
  appName: string;
}

type Handler = { fetch(request: Request, env: Env, ctx: ExecutionContext): Response | Promise<Response> };

const providers = new Map<string, OAuthProvider<Env>>();

/** This deployment's origin: APP_BASE_URL when it is set and valid, else the request's. */
function deploymentOrigin(env: Env, request: Request): string {
  try {
    const base = loadConfig(env).APP_BASE_URL;
    if (base) return new URL(base).origin;
  } catch {
    // An invalid configuration is the app's to report (worker/errors.ts); the request's origin serves here.
  }
  return new URL(request.url).origin;
}

function options(origin: string, app: Handler): OAuthProviderOptions<Env> {
  return {
    apiRoute: MCP_PATH,
    apiHandler: app,
    defaultHandler: app,
    authorizeEndpoint: AUTHORIZE_PATH,
    tokenEndpoint: "/oauth/token",
    clientRegistrationEndpoint: "/oauth/register",
    scopesSupported: [...SCOPES, "offline_access"],
    // What a standard client asks for: the 401 challenge's scope, else this resource's scopes_supported
    // (issue 25). Both scopes, so the consent page opens with write ticked and the person may untick it;
    // advertised here, enforced by the /mcp route (worker/mcp/server.ts) per tool.
    requiredScopes: [...SCOPES],
    accessTokenTTL: ACCESS_TOKEN_SECONDS,
    refreshTokenIdleTTL: REFRESH_IDLE_SECONDS,
    // A registration lives twice the refresh idle time, renewed by the provider when a token exchange
    // finds it past half: no grant outlives its client. One nobody connected goes within a day
    // (worker/mcp/upkeep.ts).
    clientRegistrationTTL: 2 * REFRESH_IDLE_SECONDS,
    clientIdMetadataDocumentEnabled: true,
    resourceMetadata: { resource: `${origin}${MCP_PATH}`, authorization_servers: [origin], resource_name: "Soma memory" },
  };
}

/** The doors anyone may knock on without a session or a token, each limited per client address. */
const LIMITED_DOORS = new Set(["/oauth/register", AUTHORIZE_PATH]);

/**
 * 429 when this client address asked too often at a door that writes to KV or fetches a URL the client
 * names (registration; /authorize, which may fetch a client ID metadata document): a free KV plan's
 * 1,000 writes a day would otherwise be one script away from no app getting a token. Null when allowed.
 */
async function overDoorLimit(request: Request, env: Env): Promise<Response | null> {
  const { pathname } = new URL(request.url);
  if (!LIMITED_DOORS.has(pathname)) return null;
  const address = request.headers.get("cf-connecting-ip") ?? "unknown";
  const { success } = await env.OAUTH_RATE_LIMITER.limit({ key: `${pathname}:${address}` });
  if (success) return null;
  return Response.json(
    { error: "rate_limited", error_description: "Too many requests from this address. Try again in a minute." },
    { status: 429, headers: { "Retry-After": "60", "Cache-Control": "no-store" } },
  );
}

/** The Worker's fetch: the OAuth provider for this origin in front of `app`. */
export function withOAuth(app: Handler): { fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> } {
  return {
    async fetch(request, env, ctx) {
      const limited = await overDoorLimit(request, env);
      if (limited) return limited;
      const origin = deploymentOrigin(env, request);
      let provider = providers.get(origin);
      if (!provider) {
        // One origin in production (APP_BASE_URL is required there); a bound on what Host headers can grow.
        if (providers.size >= 8) providers.clear();
        provider = new OAuthProvider(options(origin, app));
        providers.set(origin, provider);
      }
      return provider.fetch(request, env, ctx);
    },
  };
}

/** The provider's helpers (consent, grants, clients) for this deployment, usable from any route (and,
 * without a request, from the scheduled upkeep: the helpers it uses do not depend on the origin). */
export function oauthApi(env: Env, request?: Request): OAuthHelpers {
  const noApp: Handler = { fetch: () => new Response(null, { status: 404 }) };
  return getOAuthApi(options(deploymentOrigin(env, request ?? new Request("http://localhost/")), noApp), env);
}
