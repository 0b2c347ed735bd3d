// Sign-in records: people, browser sessions and one-time login links, and the tombstones of deleted
// accounts. Runs as soma_auth, which sees the auth schema and nothing of the user data. Tokens are
// random; only their SHA-256 is stored, and so are the identities of a deleted account.
import { and, eq, gt, isNull, lt, or, sql } from "drizzle-orm";
import { type Database, sqlRows, type Tx } from "../database";
import { authDeletedPeople, authGroupChatNotices, authLoginTokens, authSessions, authUsers } from "../schema";

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
    const [row] = await tx.insert(authUsers).values(person).returning({ id: authUsers.id, displayName: authUsers.displayName });
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

/** The person a session token belongs to, or null when the token is unknown or expired (or, with
 * `createdBefore`, made at or after that instant). */
export async function findSessionPerson(db: Database, token: string, options: { createdBefore?: Date } = {}): Promise<Person | null> {
  const tokenHash = await hashToken(token);
  return db.withAuth(async (tx) => {
    const [row] = await tx
      .select({ id: authUsers.id, displayName: authUsers.displayName })
      .from(authSessions)
      .innerJoin(authUsers, eq(authUsers.id, authSessions.userId))
      .where(
        and(
          eq(authSessions.tokenHash, tokenHash),
          gt(authSessions.expiresAt, new Date()),
          options.createdBefore ? lt(authSessions.createdAt, options.createdBefore) : undefined,
        ),
      )
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

/** Whose a login token is (their display name), without spending it; null if unknown, expired or used. */
export async function peekLoginToken(db: Database, token: string): Promise<{ displayName: string } | null> {
  const tokenHash = await hashToken(token);
  return db.withAuth(async (tx: Tx) => {
    const [row] = await tx
      .select({ displayName: authUsers.displayName })
      .from(authLoginTokens)
      .innerJoin(authUsers, eq(authUsers.id, authLoginTokens.userId))
      .where(and(eq(authLoginTokens.tokenHash, tokenHash), isNull(authLoginTokens.usedAt), gt(authLoginTokens.expiresAt, new Date())))
      .limit(1);
    return row ?? null;
  });
}

/** Spends a login token: returns its user once, null if unknown, expired or already used. */
export async function redeemLoginToken(db: Database, token: string): Promise<string | null> {
  const tokenHash = await hashToken(token);
  return db.withAuth(async (tx: Tx) => {
    const [row] = await tx
      .update(authLoginTokens)
      .set({ usedAt: new Date() })
      .where(and(eq(authLoginTokens.tokenHash, tokenHash), isNull(authLoginTokens.usedAt), gt(authLoginTokens.expiresAt, new Date())))
      .returning({ userId: authLoginTokens.userId });
    return row?.userId ?? null;
  });
}

function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
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
 * Throws AccountDeletedError while the account's tombstone stands: then nobody is created.
 */
export async function ensureTelegramPerson(
  db: Database,
  account: { telegramUserId: number; chatId: number; displayName: string },
): Promise<Person & { created: boolean }> {
  const identity = await identityHash({ kind: "telegram", id: account.telegramUserId });
  return db.withAuth(async (tx) => {
    const rows = await sqlRows<{
      id: string | null;
      display_name: string | null;
      created: boolean;
      deleted_at: string | Date | null;
    }>(
      tx,
      sql`
      with tombstone as (
        select deleted_at from auth.deleted_people
        where identity_hash = ${identity} and deleted_at > now() - make_interval(hours => ${TOMBSTONE_HOURS})
      ), upserted as (
        insert into auth.users (display_name, telegram_user_id, telegram_chat_id)
        select ${storableName(account.displayName)}, ${account.telegramUserId}::bigint, ${account.chatId}::bigint
        where not exists (select 1 from tombstone)
        on conflict (telegram_user_id) do update set telegram_chat_id = excluded.telegram_chat_id
          where auth.users.telegram_chat_id is distinct from excluded.telegram_chat_id
        returning id, display_name, (xmax = 0) as created
      )
      select id, display_name, created, null::timestamptz as deleted_at from upserted
      union all
      select id, display_name, false, null from auth.users
      where telegram_user_id = ${account.telegramUserId} and not exists (select 1 from upserted)
      union all
      select null, null, false, deleted_at from tombstone`,
    );
    const person = rows.find((row) => row.id !== null);
    if (person) return { id: person.id!, displayName: person.display_name ?? "", created: person.created };
    const tombstone = rows[0]?.deleted_at;
    if (tombstone) throw new AccountDeletedError(new Date(tombstone));
    throw new Error("ensureTelegramPerson found no row");
  });
}

/**
 * The person with this Google account (by its stable subject id), created on first sign-in. Throws
 * AccountDeletedError while the tombstone of a deleted account with this Google account stands.
 */
export async function ensureGooglePerson(
  db: Database,
  account: { sub: string; email: string | null; displayName: string },
): Promise<Person & { created: boolean }> {
  const identity = await identityHash({ kind: "google", sub: account.sub });
  return db.withAuth(async (tx) => {
    const deletedAt = await standingTombstone(tx, identity);
    if (deletedAt) throw new AccountDeletedError(deletedAt);
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

/**
 * Deletes a person and, by cascade, every row of theirs in both schemas; in the same transaction their
 * Telegram and Google identities get a tombstone (see AccountDeletedError). Tombstones past their day
 * are purged here. The development sign-in's email gets none: nothing stale can replay a button click.
 */
export async function deletePerson(db: Database, userId: string): Promise<void> {
  await db.withAuth(async (tx) => {
    const [person] = await tx
      .select({ telegramUserId: authUsers.telegramUserId, googleSub: authUsers.googleSub })
      .from(authUsers)
      .where(eq(authUsers.id, userId))
      .for("update");
    if (!person) return;
    const identities: Identity[] = [];
    if (person.telegramUserId !== null) identities.push({ kind: "telegram", id: person.telegramUserId });
    if (person.googleSub !== null) identities.push({ kind: "google", sub: person.googleSub });
    await tx.delete(authDeletedPeople).where(lt(authDeletedPeople.deletedAt, sql`now() - make_interval(hours => ${TOMBSTONE_HOURS})`));
    if (identities.length > 0) {
      const rows = await Promise.all(identities.map(async (identity) => ({ identityHash: await identityHash(identity) })));
      await tx
        .insert(authDeletedPeople)
        .values(rows)
        .onConflictDoUpdate({ target: authDeletedPeople.identityHash, set: { deletedAt: sql`now()`, notifiedAt: null } });
    }
    await tx.delete(authUsers).where(eq(authUsers.id, userId));
  });
}

// ---------------------------------------------------------------------------------------------
// Tombstones of deleted accounts, and the once-a-day notice of group chats.
// ---------------------------------------------------------------------------------------------

/**
 * How long a deleted account's identities stay closed to every door. Telegram keeps redelivering an
 * unacknowledged update for up to 24 hours, and no isolate caches a sender for more than a minute.
 */
const TOMBSTONE_HOURS = 24;

/** A sign-in identity of a person, as its tombstone names it (hashed, never stored in clear). */
type Identity = { kind: "telegram"; id: number } | { kind: "google"; sub: string };

/** The account of this identity was deleted less than TOMBSTONE_HOURS ago: no door may create it again yet. */
export class AccountDeletedError extends Error {
  constructor(readonly deletedAt: Date) {
    const until = new Date(deletedAt.getTime() + TOMBSTONE_HOURS * 3600_000);
    super(
      `This Soma account was deleted. A new one can be started after ${until.toISOString().slice(0, 16).replace("T", " ")} UTC, or at once with /start to the bot on Telegram.`,
    );
    this.name = "AccountDeletedError";
  }
}

async function identityHash(identity: Identity): Promise<string> {
  return hashToken(identity.kind === "telegram" ? `telegram:${identity.id}` : `google:${identity.sub}`);
}

async function standingTombstone(tx: Tx, identity: string): Promise<Date | null> {
  const [row] = await tx
    .select({ deletedAt: authDeletedPeople.deletedAt })
    .from(authDeletedPeople)
    .where(
      and(
        eq(authDeletedPeople.identityHash, identity),
        gt(authDeletedPeople.deletedAt, sql`now() - make_interval(hours => ${TOMBSTONE_HOURS})`),
      ),
    );
  return row?.deletedAt ?? null;
}

/**
 * Lifts the tombstone of a deleted Telegram account for a message sent after the deletion (the
 * person's deliberate /start): the next message creates a new, empty account. False when the message
 * is older than the deletion (a redelivery) or there is no tombstone.
 */
export async function reopenTelegramIdentity(db: Database, telegramUserId: number, sentAt: Date): Promise<boolean> {
  const identity = await identityHash({ kind: "telegram", id: telegramUserId });
  const rows = await db.withAuth((tx) =>
    tx
      .delete(authDeletedPeople)
      .where(and(eq(authDeletedPeople.identityHash, identity), lt(authDeletedPeople.deletedAt, sentAt)))
      .returning({ identityHash: authDeletedPeople.identityHash }),
  );
  return rows.length > 0;
}

/**
 * Claims the "your account was deleted" notice for a deleted Telegram account: true at most once a
 * minute, across isolates, so a burst of messages (or a redelivery) is told once.
 */
export async function claimDeletedNotice(db: Database, telegramUserId: number): Promise<boolean> {
  const identity = await identityHash({ kind: "telegram", id: telegramUserId });
  const rows = await db.withAuth((tx) =>
    tx
      .update(authDeletedPeople)
      .set({ notifiedAt: sql`now()` })
      .where(
        and(
          eq(authDeletedPeople.identityHash, identity),
          or(isNull(authDeletedPeople.notifiedAt), lt(authDeletedPeople.notifiedAt, sql`now() - interval '1 minute'`)),
        ),
      )
      .returning({ identityHash: authDeletedPeople.identityHash }),
  );
  return rows.length > 0;
}

/** Claims the "private chats only" notice for a group chat: true at most once a day per group, across isolates. */
export async function claimGroupNotice(db: Database, chatId: number): Promise<boolean> {
  const rows = await db.withAuth((tx) =>
    tx
      .insert(authGroupChatNotices)
      .values({ chatId })
      .onConflictDoUpdate({
        target: authGroupChatNotices.chatId,
        set: { notifiedAt: sql`now()` },
        setWhere: lt(authGroupChatNotices.notifiedAt, sql`now() - interval '1 day'`),
      })
      .returning({ chatId: authGroupChatNotices.chatId }),
  );
  return rows.length > 0;
}
