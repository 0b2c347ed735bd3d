// What the proactive workflows read and record: the day's brief, the weekly review, where to reach the
// person, and the ledger that makes each delivery happen once (a reminder's is its own status, in
// ./reminders.ts). Person-scoped functions take a Database.withUser transaction; the fan-out listings
// take a withSystem one.
import { and, eq, gte, sql } from "drizzle-orm";
import { sqlRows, type Tx } from "../database";
import { entities, events, facts, sources, users } from "../schema";
import { claimSource } from "./memory";
import type { RoutineName } from "./routines";

/** Where and how to reach the person (their own users row, visible to them under RLS). */
export async function contactOf(
  tx: Tx,
): Promise<{ chatId: number | null; timezone: string; displayName: string; notify: Record<string, string> } | null> {
  const [row] = await tx
    .select({ chatId: users.telegramChatId, timezone: users.timezone, displayName: users.displayName, notify: users.notify })
    .from(users)
    .limit(1);
  return row ?? null;
}

/**
 * Claims one delivery (a brief for a date, a weekly review for a week): true for the first caller,
 * false for every later one. The claim is a `sources` row, unique per (person, kind, key), holding
 * what was sent — the provenance of a message Soma wrote on its own.
 */
export async function claimDelivery(tx: Tx, userId: string, kind: "brief" | "weekly-review", key: string, text: string): Promise<boolean> {
  return (await claimSource(tx, userId, { kind, externalId: key, payload: { text } })) !== null;
}

/** What a claimed delivery holds (claimDelivery's text); null when this person has no such claim (or no longer exists). */
export async function claimedDelivery(tx: Tx, kind: "brief" | "weekly-review", key: string): Promise<string | null> {
  const [row] = await tx
    .select({ text: sql<string | null>`${sources.payload} ->> 'text'` })
    .from(sources)
    .where(and(eq(sources.kind, kind), eq(sources.externalId, key)));
  return row?.text ?? null;
}

export interface BriefContents {
  upcoming: Array<{ kind: string; at: Date; text: string }>;
  recent: Array<{ type: string; name: string }>;
  mail: number;
}

/** The person's next 24 hours and last 24 hours, for the morning brief. */
export async function briefContents(tx: Tx, now: Date): Promise<BriefContents> {
  const dayAgo = new Date(now.getTime() - 86_400_000);
  const dayAhead = new Date(now.getTime() + 86_400_000);
  const upcoming = await tx
    .select({ kind: events.kind, at: events.occurredAt, payload: events.payload })
    .from(events)
    .where(
      and(
        sql`${events.occurredAt} between ${now.toISOString()} and ${dayAhead.toISOString()}`,
        sql`${events.status} in ('scheduled', 'recorded')`,
      ),
    )
    .orderBy(events.occurredAt)
    .limit(10);
  const recent = await tx
    .select({ type: entities.type, name: entities.name })
    .from(entities)
    .where(
      and(
        eq(entities.status, "active"),
        gte(entities.updatedAt, dayAgo),
        // what the person talked about, not every sender of yesterday's mail (counted separately)
        sql`not exists (select 1 from sources s where s.id = ${entities.sourceId} and s.kind = 'gmail')`,
      ),
    )
    .orderBy(sql`${entities.updatedAt} desc`)
    .limit(8);
  return {
    upcoming: upcoming.map((e) => ({ kind: e.kind, at: e.at, text: String(e.payload.text ?? e.payload.subject ?? e.kind) })),
    recent,
    mail: await mailSince(tx, dayAgo),
  };
}

/** Emails received since `since`. */
async function mailSince(tx: Tx, since: Date): Promise<number> {
  const [mail] = await tx
    .select({ n: sql<number>`count(*)::int` })
    .from(events)
    .where(and(eq(events.kind, "email_received"), gte(events.occurredAt, since)));
  return mail?.n ?? 0;
}

export interface WeekContents {
  byType: Array<{ type: string; names: string[] }>;
  facts: string[];
  mail: number;
}

/** What the person added in the week since `since`. */
export async function weekContents(tx: Tx, since: Date): Promise<WeekContents> {
  // Names as JSON, not text[]: the driver leaves arrays as Postgres's text form, in which a name with a
  // comma or a quote ("Portland, Oregon") cannot be split back reliably. Mail senders are counted as
  // mail, not listed as what the person added (as in the brief).
  const byType = await sqlRows<{ type: string; names: string[] | string }>(
    tx,
    sql`
    select type, to_jsonb((array_agg(name order by created_at desc))[1:6]) as names, count(*)::int as n
    from entities e
    where status = 'active' and created_at >= ${since.toISOString()}
      and not exists (select 1 from sources s where s.id = e.source_id and s.kind = 'gmail')
    group by type order by count(*) desc, type limit 8`,
  );
  const newFacts = await tx
    .select({ statement: facts.statement })
    .from(facts)
    .where(and(sql`${facts.supersededBy} is null`, gte(facts.createdAt, since)))
    .orderBy(sql`${facts.confidence} desc`)
    .limit(5);
  return {
    byType: byType.map((r) => ({ type: r.type, names: Array.isArray(r.names) ? r.names : (JSON.parse(r.names) as string[]) })),
    facts: newFacts.map((f) => f.statement),
    mail: await mailSince(tx, since),
  };
}

// ---- system role (Database.withSystem): whom to fan out to ----

/**
 * People Soma can reach (a Telegram chat, or a device with notifications on) whose local hour is `hour` at
 * `now` (and, with `weekday`, whose local ISO weekday is that: 7 = Sunday), with their local date. Zone by
 * zone: the zones Postgres knows where it is that hour (a few dozen of its ~600 names), then their people
 * through users_timezone_idx, so an hourly run reads the people due and not everyone (measured in
 * bench:push). A timezone Postgres does not know (users.timezone is free text) matches no zone and
 * leaves that person out instead of failing everyone's fan-out.
 * People who set `routine` themselves (moved it or turned it off: ./routines.ts) are left out: their own
 * occurrences come as delayed events (agents/schedules/routines.ts).
 */
export async function peopleAtLocalHour(
  tx: Tx,
  routine: RoutineName,
  hour: number,
  now: Date,
  weekday?: number,
): Promise<Array<{ userId: string; localDate: string }>> {
  return await sqlRows<{ userId: string; localDate: string }>(
    tx,
    sql`
    with zones as materialized (
      select name, ${now.toISOString()}::timestamptz at time zone name as local_time from pg_timezone_names
    ),
    due as materialized (
      select name, to_char(local_time, 'YYYY-MM-DD') as local_date from zones
      where extract(hour from local_time) = ${hour}
        ${weekday === undefined ? sql`` : sql`and extract(isodow from local_time) = ${weekday}`}
    )
    select u.id as "userId", due.local_date as "localDate"
    from due join users u on u.timezone = due.name
    where (u.telegram_chat_id is not null
           or exists (select 1 from oauth_connections c where c.user_id = u.id and c.provider like 'webpush:%'))
      and not exists (select 1 from events e where e.user_id = u.id and e.kind = 'routine' and e.idempotency_key = ${`routine:${routine}`})
    order by u.id`,
  );
}

/** Everyone (nightly jobs that look at each person's own recent rows). */
export async function everyone(tx: Tx): Promise<string[]> {
  const rows = await tx.select({ id: users.id }).from(users).orderBy(users.id);
  return rows.map((r) => r.id);
}
