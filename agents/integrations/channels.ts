// Where a message Soma sends on its own goes: the one place that decides, for each kind — a reminder,
// the morning brief, the weekly review, a reply that finished while the person was away — which of
// the person's channels it takes: Telegram, a push to their devices (Web Push), or both. The person's
// choice per kind is kept in users.notify (Settings, PUT /api/me/notify); by default every channel they
// have. A choice that reaches nothing they have falls back to every channel there is, so a reminder is
// never silently lost because a setting points at a channel that has gone; "off" is only for replies.
import { z } from "zod";

const NOTICE_KINDS = ["reminder", "brief", "review", "reply"] as const;
export type NoticeKind = (typeof NOTICE_KINDS)[number];

/** A kind's choice: every channel, one of them, or (replies only) none. */
const ChannelChoice = z.enum(["all", "telegram", "push", "off"]);

export const NotifyPreferences = z
  .object({
    reminder: ChannelChoice.exclude(["off"]),
    brief: ChannelChoice.exclude(["off"]),
    review: ChannelChoice.exclude(["off"]),
    reply: z.enum(["all", "off"]),
  })
  .partial()
  .strict();
export type NotifyPreferences = z.infer<typeof NotifyPreferences>;

export interface Channels {
  telegram: boolean;
  push: boolean;
}

/** The person's choices with the defaults filled in (a stored value that no longer parses counts as unset). */
export function notifyChoices(stored: unknown): Required<NotifyPreferences> {
  const parsed = NotifyPreferences.safeParse(stored ?? {});
  return { reminder: "all", brief: "all", review: "all", reply: "all", ...(parsed.success ? parsed.data : {}) };
}

/** The channels `kind` goes to, of those the person has (`available`), by their choice. */
export function channelsFor(kind: NoticeKind, stored: unknown, available: Channels): Channels {
  const choice = notifyChoices(stored)[kind];
  if (choice === "off") return { telegram: false, push: false };
  const wanted = { telegram: available.telegram && choice !== "push", push: available.push && choice !== "telegram" };
  return wanted.telegram || wanted.push ? wanted : available;
}
