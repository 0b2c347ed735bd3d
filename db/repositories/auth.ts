// Sign-in records: people, browser sessions and one-time login links. Runs as soma_auth, which sees
// the auth schema and nothing of the user data. Tokens are random; only their SHA-256 is stored.
import { and, eq, gt, isNull, sql } from "drizzle-orm";
import type { Database, Tx } from "../database";
import { authLoginTokens, authSessions, authUsers } from "../schema";

export interface Person {
  id: string;
  displayName: string;
}

export interface NewPerson {
  displayName: string;
  email?: string;
  telegramUserId?: number;
  telegramChatId?: number;
  timezone?: string;
}

/** Creates a person; the auth mirror trigger creates their public.users row in the same transaction. */
export function createPerson(db: Database, person: NewPerson): Promise<Person> {
  return db.withAuth(async (tx) => {
    const [row] = await tx
      .insert(authUsers)
      .values(person)
      .returning({ id: authUsers.id, displayName: authUsers.displayName });
    if (!row) throw new Error("insert into auth.users returned no row");
    return row;
  });
}

/** Starts a browser session for `userId`; returns the raw token for the cookie (stored hashed). */
export function createSession(db: Database, userId: string, ttlSeconds: number, userAgent?: string): Promise<string> {
  return db.withAuth(async (tx) => {
    const token = randomToken();
    await tx.insert(authSessions).values({
      tokenHash: await hashToken(token),
      userId,
      expiresAt: new Date(Date.now() + ttlSeconds * 1000),
      userAgent: userAgent?.slice(0, 255),
    });
    return token;
  });
}

/** The person a session token belongs to, or null when the token is unknown or expired. */
export async function findSessionPerson(db: Database, token: string): Promise<Person | null> {
  const tokenHash = await hashToken(token);
  return db.withAuth(async (tx) => {
    const [row] = await tx
      .select({ id: authUsers.id, displayName: authUsers.displayName })
      .from(authSessions)
      .innerJoin(authUsers, eq(authUsers.id, authSessions.userId))
      .where(and(eq(authSessions.tokenHash, tokenHash), gt(authSessions.expiresAt, new Date())))
      .limit(1);
    return row ?? null;
  });
}

export async function deleteSession(db: Database, token: string): Promise<void> {
  const tokenHash = await hashToken(token);
  await db.withAuth((tx) => tx.delete(authSessions).where(eq(authSessions.tokenHash, tokenHash)));
}

/** Issues a single-use login link token for `userId`, valid for `ttlSeconds`. */
export function createLoginToken(db: Database, userId: string, ttlSeconds: number): Promise<string> {
  return db.withAuth(async (tx) => {
    const token = randomToken();
    await tx.insert(authLoginTokens).values({
      tokenHash: await hashToken(token),
      userId,
      expiresAt: new Date(Date.now() + ttlSeconds * 1000),
    });
    return token;
  });
}

/** Spends a login token: returns its user once, null if unknown, expired or already used. */
export async function redeemLoginToken(db: Database, token: string): Promise<string | null> {
  const tokenHash = await hashToken(token);
  return db.withAuth(async (tx: Tx) => {
    const [row] = await tx
      .update(authLoginTokens)
      .set({ usedAt: new Date() })
      .where(
        and(
          eq(authLoginTokens.tokenHash, tokenHash),
          isNull(authLoginTokens.usedAt),
          gt(authLoginTokens.expiresAt, new Date()),
        ),
      )
      .returning({ userId: authLoginTokens.userId });
    return row?.userId ?? null;
  });
}

function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

async function hashToken(token: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The person with `email`, created on first use (the development sign-in's fixed account). */
export function ensurePersonByEmail(db: Database, email: string, displayName: string): Promise<Person> {
  return db.withAuth(async (tx) => {
    const [row] = await tx
      .insert(authUsers)
      .values({ email, displayName })
      .onConflictDoUpdate({ target: authUsers.email, set: { email } })
      .returning({ id: authUsers.id, displayName: authUsers.displayName });
    if (!row) throw new Error("ensurePersonByEmail returned no row");
    return row;
  });
}

/**
 * The person behind a Telegram account, created on first contact (`created` true then). Keeps the
 * chat id current: replies and reminders go there. This runs for every incoming message, so it is one
 * statement and writes nothing when nothing changed (a write would also fire the auth mirror).
 */
export function ensureTelegramPerson(
  db: Database,
  account: { telegramUserId: number; chatId: number; displayName: string },
): Promise<Person & { created: boolean }> {
  return db.withAuth(async (tx) => {
    const rows = (await tx.execute(sql`
      with upserted as (
        insert into auth.users (display_name, telegram_user_id, telegram_chat_id)
        values (${storableName(account.displayName)}, ${account.telegramUserId}, ${account.chatId})
        on conflict (telegram_user_id) do update set telegram_chat_id = excluded.telegram_chat_id
          where auth.users.telegram_chat_id is distinct from excluded.telegram_chat_id
        returning id, display_name, (xmax = 0) as created
      )
      select id, display_name, created from upserted
      union all
      select id, display_name, false from auth.users
      where telegram_user_id = ${account.telegramUserId} and not exists (select 1 from upserted)`)) as unknown as Array<{
      id: string;
      display_name: string;
      created: boolean;
    }>;
    const row = rows[0];
    if (!row) throw new Error("ensureTelegramPerson found no row");
    return { id: row.id, displayName: row.display_name, created: row.created };
  });
}

/** The person with this Google account (by its stable subject id), created on first sign-in. */
export function ensureGooglePerson(db: Database, account: { sub: string; email: string | null; displayName: string }): Promise<Person & { created: boolean }> {
  return db.withAuth(async (tx) => {
    const [row] = await tx
      .insert(authUsers)
      .values({ googleSub: account.sub, displayName: storableName(account.displayName) })
      .onConflictDoUpdate({ target: authUsers.googleSub, set: { googleSub: account.sub } })
      .returning({ id: authUsers.id, displayName: authUsers.displayName, created: sql<boolean>`(xmax = 0)` });
    if (!row) throw new Error("ensureGooglePerson returned no row");
    return row;
  });
}

/** A display name from another service as Postgres text can hold it (no NUL). */
function storableName(name: string): string {
  return name.replaceAll("\u0000", "");
}

/** Deletes a person and, by cascade, every row of theirs in both schemas. */
export async function deletePerson(db: Database, userId: string): Promise<void> {
  await db.withAuth((tx) => tx.delete(authUsers).where(eq(authUsers.id, userId)));
}
