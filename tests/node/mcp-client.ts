// An MCP app as the official TypeScript client builds one: an OAuthClientProvider that keeps its
// registration, PKCE verifier and tokens in memory, and hands the authorization URL to whoever plays the
// person (a Chromium page in the browser suite). Its redirect URI is a loopback server of its own that
// catches the code, as desktop MCP clients do.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  Client,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from "@modelcontextprotocol/client";

export class MemoryOAuthApp implements OAuthClientProvider {
  clientInfo: StoredOAuthClientInformation | undefined;
  saved: StoredOAuthTokens | undefined;
  #verifier = "";
  #callback: Server | undefined;
  #redirect = "";
  /** What the callback received with each code (code, state, iss), in order: a test replays one. */
  readonly callbacks: URLSearchParams[] = [];

  constructor(
    readonly name: string,
    /** Plays the person: opens the authorization URL in a browser and answers the consent page. */
    public onAuthorize: (url: URL) => Promise<void>,
    /** Scopes of its own, if it names any; by default none, as Claude and most apps: the client then
     * asks for what the server's 401 challenge names (the official SDK's scope selection). */
    readonly scope?: string,
  ) {}

  /** Starts the loopback callback server (call before connecting). */
  async listen(): Promise<void> {
    this.#callback = createServer((request, response) => {
      const params = new URL(request.url ?? "/", "http://127.0.0.1").searchParams;
      const code = params.get("code");
      if (code) this.callbacks.push(params);
      response.writeHead(200, { "content-type": "text/plain" }).end(code ? "Connected. You can close this window." : "No code.");
    });
    await new Promise<void>((resolve) => this.#callback?.listen(0, "127.0.0.1", resolve));
    this.#redirect = `http://127.0.0.1:${(this.#callback.address() as AddressInfo).port}/callback`;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.#callback ? this.#callback.close(() => resolve()) : resolve()));
  }

  get redirectUrl(): string {
    return this.#redirect;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [this.#redirect],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
      ...(this.scope ? { scope: this.scope } : {}),
    };
  }

  clientInformation() {
    return this.clientInfo;
  }
  saveClientInformation(info: StoredOAuthClientInformation) {
    this.clientInfo = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: StoredOAuthTokens) {
    this.saved = tokens;
  }
  async redirectToAuthorization(url: URL) {
    await this.onAuthorize(url);
  }
  saveCodeVerifier(verifier: string) {
    this.#verifier = verifier;
  }
  codeVerifier() {
    return this.#verifier;
  }
}

function transportFor(baseUrl: string, app: MemoryOAuthApp) {
  return new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), { authProvider: app });
}

/**
 * Connects `app` to `baseUrl`/mcp the way a client does the first time: the 401, discovery,
 * registration, the person's consent (app.onAuthorize), the code, tokens, then the connection.
 */
export async function connectWithConsent(baseUrl: string, app: MemoryOAuthApp): Promise<Client> {
  const first = new Client({ name: app.name, version: "1.0.0" });
  try {
    await first.connect(transportFor(baseUrl, app));
    return first;
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
  }
  const callback = app.callbacks.at(-1);
  if (!callback) throw new Error("the person did not allow the app (no code reached its callback)");
  // The whole callback: the client checks its iss (RFC 9207) before exchanging the code.
  await transportFor(baseUrl, app).finishAuth(callback);
  const client = new Client({ name: app.name, version: "1.0.0" });
  await client.connect(transportFor(baseUrl, app));
  return client;
}

/** A connection with the tokens the app already holds (no consent: the client refreshes if it must). */
export async function reconnect(baseUrl: string, app: MemoryOAuthApp): Promise<Client> {
  const client = new Client({ name: app.name, version: "1.0.0" });
  await client.connect(transportFor(baseUrl, app));
  return client;
}
