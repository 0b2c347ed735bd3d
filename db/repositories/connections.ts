// OAuth connections (Gmail): tokens arrive here already sealed by TokenCipher for their slot (person,
// provider, column); rows are per person and provider, under row-level security like every table.
// Reading the tokens goes through openConnection, which also re-seals legacy (v1, unbound) tokens.
import { and, eq, inArray, isNull, lt, or, sql } from "drizzle-orm";
import type { Tx } from "../database";
import { oauthConnections } from "../schema";
import { TokenCipher, type TokenSlot } from "../token-cipher";

export interface SealedConnection {
  provider: "google";
  accountEmail: string | null;
  scope: string;
  accessTokenEnc: string;
  refreshTokenEnc: string | null;
  accessTokenExpiresAt: Date | null;
}

/**
 * Creates or refreshes the person's connection to `provider`. Reconnecting the same account keeps its
 * mail position and watch, and a missing refresh token keeps the old one; a different account is a
 * different mailbox, so its position, watch and refresh token start afresh (the old mailbox's history
 * id means nothing there, and saveMailState only ever moves it forward).
 */
export async function saveConnection(tx: Tx, userId: string, connection: SealedConnection): Promise<void> {
  const sameAccount = sql`lower(excluded.account_email) is not distinct from lower(${oauthConnections.accountEmail})`;
  const write = tx
    .insert(oauthConnections)
    .values({ userId, ...connection })
    .onConflictDoUpdate({
      target: [oauthConnections.userId, oauthConnections.provider],
      set: {
        accountEmail: connection.accountEmail,
        scope: connection.scope,
        accessTokenEnc: connection.accessTokenEnc,
        refreshTokenEnc: sql`case when ${sameAccount} then coalesce(excluded.refresh_token_enc, ${oauthConnections.refreshTokenEnc})
          else excluded.refresh_token_enc end`,
        accessTokenExpiresAt: connection.accessTokenExpiresAt,
        gmailHistoryId: sql`case when ${sameAccount} then ${oauthConnections.gmailHistoryId} end`,
        watchExpiresAt: sql`case when ${sameAccount} then ${oauthConnections.watchExpiresAt} end`,
      },
    });
  await guardMailboxOwner(write, connection.accountEmail);
}

/** The mailbox is connected to another person's account (a mailbox has one owner). */
export class MailboxTakenError extends Error {
  constructor(readonly email: string) {
    super(`${email} is already connected to another Soma account`);
    this.name = "MailboxTakenError";
  }
}

/** Turns the one-owner index's refusal (two people connecting one mailbox at once) into MailboxTakenError. */
async function guardMailboxOwner(write: Promise<unknown>, email: string | null): Promise<void> {
  try {
    await write;
  } catch (error) {
    const cause =
      (error as { cause?: { code?: string; constraint_name?: string } }).cause ?? (error as { code?: string; constraint_name?: string });
    if (email && cause.code === "23505" && cause.constraint_name === "oauth_connections_provider_account_email_uq")
      throw new MailboxTakenError(email);
    throw error;
  }
}

export interface Connection {
  accountEmail: string | null;
  scope: string | null;
  accessTokenEnc: string | null;
  refreshTokenEnc: string | null;
  accessTokenExpiresAt: Date | null;
  gmailHistoryId: string | null;
  watchExpiresAt: Date | null;
}

/** The person's connection to `provider`, or null. */
async function getConnection(tx: Tx, provider: "google"): Promise<Connection | null> {
  const [row] = await tx
    .select({
      accountEmail: oauthConnections.accountEmail,
      scope: oauthConnections.scope,
      accessTokenEnc: oauthConnections.accessTokenEnc,
      refreshTokenEnc: oauthConnections.refreshTokenEnc,
      accessTokenExpiresAt: oauthConnections.accessTokenExpiresAt,
      gmailHistoryId: oauthConnections.gmailHistoryId,
      watchExpiresAt: oauthConnections.watchExpiresAt,
    })
    .from(oauthConnections)
    .where(eq(oauthConnections.provider, provider));
  return row ?? null;
}

/** Whether the person has connected `provider`, and with which address: null when not connected. */
export async function connectedAccount(tx: Tx, provider: "google"): Promise<{ accountEmail: string | null } | null> {
  const [row] = await tx
    .select({ accountEmail: oauthConnections.accountEmail })
    .from(oauthConnections)
    .where(eq(oauthConnections.provider, provider));
  return row ?? null;
}

export interface OpenedTokens {
  accessToken: string | null;
  refreshToken: string | null;
}

/**
 * The person's connection to `provider` and its tokens opened, or null. Each token opens only for this
 * person, provider and column (a token copied in from another row throws). A legacy v1 token is
 * re-sealed for its slot here, in the caller's transaction, unless something replaced it meanwhile.
 */
export async function openConnection(
  tx: Tx,
  userId: string,
  provider: "google",
  cipher: TokenCipher,
): Promise<{ connection: Connection; tokens: OpenedTokens } | null> {
  const connection = await getConnection(tx, provider);
  if (!connection) return null;
  const open = async (column: TokenSlot["column"], stored: string | null): Promise<string | null> => {
    if (!stored) return null;
    const slot = { userId, provider, column };
    const plaintext = await cipher.decrypt(stored, slot);
    if (TokenCipher.isLegacy(stored)) {
      const target = column === "access_token" ? oauthConnections.accessTokenEnc : oauthConnections.refreshTokenEnc;
      await tx
        .update(oauthConnections)
        .set(
          column === "access_token"
            ? { accessTokenEnc: await cipher.encrypt(plaintext, slot) }
            : { refreshTokenEnc: await cipher.encrypt(plaintext, slot) },
        )
        .where(and(eq(oauthConnections.provider, provider), eq(target, stored)));
    }
    return plaintext;
  };
  return {
    connection,
    tokens: {
      accessToken: await open("access_token", connection.accessTokenEnc),
      refreshToken: await open("refresh_token", connection.refreshTokenEnc),
    },
  };
}

/** Stores a refreshed (sealed) access token. */
export async function saveAccessToken(tx: Tx, provider: "google", accessTokenEnc: string, expiresAt: Date | null): Promise<void> {
  await tx
    .update(oauthConnections)
    .set({ accessTokenEnc, accessTokenExpiresAt: expiresAt, updatedAt: sql`now()` })
    .where(eq(oauthConnections.provider, provider));
}

/**
 * Records Gmail's position: `historyId` only ever moves it forward (a late or replayed notification
 * cannot rewind it); `startHistoryId` sets it only when there is none yet (a renewed watch must not
 * skip mail that has not been read); the watch expiry when given.
 */
export async function saveMailState(tx: Tx, state: { historyId?: string; startHistoryId?: string; watchExpiresAt?: Date }): Promise<void> {
  await tx
    .update(oauthConnections)
    .set({
      ...(state.startHistoryId ? { gmailHistoryId: sql`coalesce(${oauthConnections.gmailHistoryId}, ${state.startHistoryId})` } : {}),
      ...(state.historyId
        ? {
            gmailHistoryId: sql`case when ${oauthConnections.gmailHistoryId} is null
              or ${oauthConnections.gmailHistoryId}::numeric < ${state.historyId}::numeric then ${state.historyId}
              else ${oauthConnections.gmailHistoryId} end`,
          }
        : {}),
      ...(state.watchExpiresAt ? { watchExpiresAt: state.watchExpiresAt } : {}),
      updatedAt: sql`now()`,
    })
    .where(eq(oauthConnections.provider, "google"));
}

// ---- system role (Database.withSystem): the only cross-person reads, of granted columns only ----

/** Who owns this Gmail mailbox (null when nobody connected it). */
export async function mailboxOwner(tx: Tx, emailAddress: string): Promise<string | null> {
  const [row] = await tx
    .select({ userId: oauthConnections.userId })
    .from(oauthConnections)
    .where(and(eq(oauthConnections.provider, "google"), sql`lower(${oauthConnections.accountEmail}) = lower(${emailAddress})`))
    .limit(1);
  return row?.userId ?? null;
}

/** People whose Gmail watch is missing or expires before `before` (null: all), optionally only these mailboxes. */
export async function watchesExpiringBefore(tx: Tx, before: Date | null, accounts?: string[]): Promise<string[]> {
  const rows = await tx
    .select({ userId: oauthConnections.userId })
    .from(oauthConnections)
    .where(
      and(
        eq(oauthConnections.provider, "google"),
        before ? or(isNull(oauthConnections.watchExpiresAt), lt(oauthConnections.watchExpiresAt, before)) : undefined,
        accounts?.length
          ? inArray(
              sql`lower(${oauthConnections.accountEmail})`,
              accounts.map((a) => a.toLowerCase()),
            )
          : undefined,
      ),
    );
  return rows.map((r) => r.userId);
}
