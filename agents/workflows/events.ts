// The workflow events, declared once with zod: the functions trigger on these types and every sender
// creates events through them, so a payload that does not match never leaves (or reaches) a function.
// Each sender also gives the event an id derived from what it is about; Inngest drops a second event
// with the same id within 24 h, and the functions are idempotent on top of that.
import { eventType } from "inngest";
import { z } from "zod";
import { CHANNELS, type Channel } from "../../platform/channel";

const userId = z.uuid();

/**
 * A chat turn finished (any channel): fact-extract reads what the person said. The event names the
 * message (its provenance key) and never carries its words: the turn records them in Postgres first
 * (db/repositories/memory.ts, recordMessage) and the function reads them there under row-level
 * security, so Inngest's run history keeps no words and a deleted person's are gone everywhere.
 * Two older shapes are still accepted, for events queued (or retried) before each change: one with
 * the words in `text` (read only when the message was never recorded), and one whose channel was
 * called `surface` (channelOf reads either).
 */
export const turnCompleted = eventType("conversation/turn.completed", {
  schema: z.intersection(
    z.object({
      userId,
      /** The message's provenance key (sources.kind / sources.external_id). */
      source: z.object({ kind: z.string(), externalId: z.string() }),
      /** Only in events sent before the words moved to Postgres; never sent any more. */
      text: z.string().max(20_000).optional(),
    }),
    z.union([z.object({ channel: z.enum(CHANNELS) }), z.object({ surface: z.enum(CHANNELS) })]),
  ),
});

/** The channel a turn-completed event names, under either name. */
export function channelOf(event: TurnCompleted): Channel {
  return "channel" in event ? event.channel : event.surface;
}

/** Gmail told us (through Pub/Sub) that a connected mailbox changed. */
export const mailNotificationReceived = eventType("mail/notification.received", {
  schema: z.object({
    userId,
    /**
     * The mailbox's address, as Pub/Sub named it: mail-ingest does not need it (the person's connection
     * knows), and an address is the person's, so a sender should leave it out; accepted while sent.
     */
    emailAddress: z.string().optional(),
    historyId: z.string().regex(/^\d+$/),
  }),
});

/** The person asked for a reminder (schedule_create); the events row is the source of truth. */
export const reminderCreated = eventType("schedule/reminder.created", {
  schema: z.object({
    userId,
    eventId: z.uuid(),
    at: z.iso.datetime({ offset: true }),
  }),
});

/**
 * It is 08:00 for this person (the hourly fan-out), or the time they set for their brief (`at`, one
 * occurrence of their own routine, agents/schedules/routines.ts): compose and send the day's brief.
 */
export const briefRequested = eventType("brief/requested", {
  schema: z.object({
    userId,
    /** The person's local date (YYYY-MM-DD): one brief per person and day. */
    date: z.iso.date(),
    /** The occurrence of the person's own brief routine this is: it waits until then. */
    at: z.iso.datetime({ offset: true }).optional(),
  }),
});

/** The weekly review at the time the person set for it (one occurrence of their review routine). */
export const reviewRequested = eventType("review/requested", {
  schema: z.object({
    userId,
    /** The person's local date of the occurrence (YYYY-MM-DD): one review per person and ISO week. */
    date: z.iso.date(),
    at: z.iso.datetime({ offset: true }),
  }),
});

/** An import (POST /api/import) added entities or facts, stored without embeddings: memory-consolidate embeds them. */
export const memoryImported = eventType("memory/imported", {
  schema: z.object({ userId }),
});

/**
 * The person started an import of conversations from another assistant (POST /api/imports/:id/start):
 * memory-consolidate reads them into memory (agents/conversation-import.ts). The words stay in Postgres.
 */
export const importRequested = eventType("memory/import.requested", {
  schema: z.object({ userId, importId: z.uuid() }),
});

export type TurnCompleted = z.infer<typeof turnCompleted.schema>;
export type ReminderCreated = z.infer<typeof reminderCreated.schema>;
export type BriefRequested = z.infer<typeof briefRequested.schema>;
export type ReviewRequested = z.infer<typeof reviewRequested.schema>;
