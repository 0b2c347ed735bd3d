// The workflow events, declared once with zod: the functions trigger on these types and every sender
// creates events through them, so a payload that does not match never leaves (or reaches) a function.
// Each sender also gives the event an id derived from what it is about; Inngest drops a second event
// with the same id within 24 h, and the functions are idempotent on top of that.
import { eventType } from "inngest";
import { z } from "zod";
import { CHANNELS, type Channel } from "../../platform/channel";

const userId = z.uuid();

/**
 * A chat turn finished (any channel): fact-extract reads what the person said. Its channel was once
 * called `surface`: an event sent before the rename (still queued, or retried) carries that instead,
 * and is accepted as well; channelOf reads either.
 */
export const turnCompleted = eventType("conversation/turn.completed", {
  schema: z.intersection(
    z.object({
      userId,
      /** The message's provenance key (sources.kind / sources.external_id). */
      source: z.object({ kind: z.string(), externalId: z.string() }),
      text: z.string().max(20_000),
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
    emailAddress: z.string(),
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

/** It is 08:00 for this person: compose and send the day's brief. */
export const briefRequested = eventType("brief/requested", {
  schema: z.object({
    userId,
    /** The person's local date (YYYY-MM-DD): one brief per person and day. */
    date: z.iso.date(),
  }),
});

/** An import (POST /api/import) added entities or facts, stored without embeddings: memory-consolidate embeds them. */
export const memoryImported = eventType("memory/imported", {
  schema: z.object({ userId }),
});

export type TurnCompleted = z.infer<typeof turnCompleted.schema>;
