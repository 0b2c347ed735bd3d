// The person's own settings. The timezone is written to auth.users, the row of record: the auth
// mirror (db/sql/0300_triggers.sql) copies it to public.users in the same statement. Writing only
// public.users would be undone by the mirror at the next sign-in, which rewrites the whole row.
import { eq, sql } from "drizzle-orm";
import { type Database, sqlRows, type Tx } from "../database";
import { zoneOrUtc } from "../../platform/local-time";
import { authUsers, users } from "../schema";

/** Sets the person's IANA timezone (validated by the caller); false when there is no such person. */
export async function setTimezone(db: Database, userId: string, timezone: string): Promise<boolean> {
  const rows = await db.withAuth((tx) =>
    tx.update(authUsers).set({ timezone }).where(eq(authUsers.id, userId)).returning({ id: authUsers.id }),
  );
  return rows.length > 0;
}

/**
 * The person's timezone and whether a Telegram account is linked, as auth.users (the row of record)
 * says; null when there is no such person.
 */
export async function accountLinks(db: Database, userId: string): Promise<{ telegram: boolean; timezone: string } | null> {
  const [row] = await db.withAuth((tx) =>
    sqlRows<{ telegram: boolean; timezone: string }>(
      tx,
      sql`select telegram_user_id is not null as telegram, timezone from auth.users where id = ${userId}`,
    ),
  );
  return row ?? null;
}

/** The person's Telegram user id, as auth.users (the row of record) says; null when none is linked or there is no such person. */
export async function telegramUserIdOf(db: Database, userId: string): Promise<number | null> {
  const [row] = await db.withAuth((tx) =>
    tx.select({ telegramUserId: authUsers.telegramUserId }).from(authUsers).where(eq(authUsers.id, userId)),
  );
  return row?.telegramUserId ?? null;
}

/** The person's name and timezone, as their own users row says (a Database.withUser transaction). */
export async function profileOf(tx: Tx): Promise<{ displayName: string; timezone: string } | null> {
  const [row] = await tx.select({ displayName: users.displayName, timezone: users.timezone }).from(users).limit(1);
  return row ?? null;
}

/** The person's zone (zoneOrUtc of their users row), in a transaction Database.withUser opened for them. */
export async function personZone(tx: Tx): Promise<string> {
  return zoneOrUtc((await profileOf(tx))?.timezone);
}

/** Merges `choices` into where the person's messages go (auth.users.notify, mirrored into users). */
export async function setNotify(db: Database, userId: string, choices: Record<string, string>): Promise<Record<string, string>> {
  const [row] = await db.withAuth((tx) =>
    tx
      .update(authUsers)
      .set({ notify: sql`${authUsers.notify} || ${JSON.stringify(choices)}::jsonb` })
      .where(eq(authUsers.id, userId))
      .returning({ notify: authUsers.notify }),
  );
  return row?.notify ?? {};
}
