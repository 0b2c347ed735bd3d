// A person's Gmail, as the background workflows reach it: the sealed tokens of their Google
// connection are opened with TOKEN_ENCRYPTION_KEY (bound to their row, see db/token-cipher.ts), the access token is refreshed (and stored sealed
// again) when it is about to expire or Gmail refuses it, and every read runs as that person under RLS.
import { OAuth2Client, OAuth2RequestError } from "arctic";
import { NonRetriableError } from "inngest";
import type { Database } from "../../../db/database";
import { openConnection, saveAccessToken, type Connection } from "../../../db/repositories/connections";
import { SealedTokenError, TokenCipher } from "../../../db/token-cipher";
import type { Config } from "../../../platform/config";
import { GmailClient } from "./gmail-client";

/** Refresh this long before Google's expiry, so a call never starts with a token about to lapse. */
const EXPIRY_MARGIN_MS = 60_000;

/** The person's Gmail client and their stored mail state; null when they have no Google connection. */
export async function gmailFor(
  config: Config,
  db: Database,
  userId: string,
): Promise<{ gmail: GmailClient; connection: Connection } | null> {
  if (!config.TOKEN_ENCRYPTION_KEY) throw new NonRetriableError("TOKEN_ENCRYPTION_KEY is not set");
  const cipher = new TokenCipher(config.TOKEN_ENCRYPTION_KEY);
  const opened = await db
    .withUser(userId, (tx) => openConnection(tx, userId, "google", cipher))
    .catch((error: unknown) => {
      throw error instanceof SealedTokenError ? new NonRetriableError(`The stored Google tokens do not open: ${error.message}`) : error;
    });
  if (!opened?.tokens.accessToken) return null;
  const { connection, tokens: stored } = opened;

  let accessToken = opened.tokens.accessToken;
  let expiresAt = connection.accessTokenExpiresAt;

  const refresh = async (): Promise<string> => {
    if (!stored.refreshToken)
      throw new NonRetriableError("The Google connection has no refresh token; the person must connect Gmail again.");
    if (!config.GOOGLE_CLIENT_ID || !config.GOOGLE_CLIENT_SECRET) throw new NonRetriableError("Google OAuth is not configured");
    const oauth = new OAuth2Client(config.GOOGLE_CLIENT_ID, config.GOOGLE_CLIENT_SECRET, null);
    const tokens = await oauth.refreshAccessToken(config.GOOGLE_TOKEN_URL, stored.refreshToken, []).catch((error: unknown) => {
      // Google refusing the refresh token (revoked, expired) will not change on a retry.
      throw error instanceof OAuth2RequestError ? new NonRetriableError(`Google refused the refresh token: ${error.code}`) : error;
    });
    accessToken = tokens.accessToken();
    expiresAt = tokens.accessTokenExpiresAt();
    const sealed = await cipher.encrypt(accessToken, { userId, provider: "google", column: "access_token" });
    await db.withUser(userId, (tx) => saveAccessToken(tx, "google", sealed, expiresAt));
    return accessToken;
  };

  const gmail = new GmailClient(async (force) => {
    const expiring = expiresAt !== null && expiresAt.getTime() - Date.now() < EXPIRY_MARGIN_MS;
    return force || expiring ? refresh() : accessToken;
  }, config.GMAIL_API_URL);
  return { gmail, connection };
}
