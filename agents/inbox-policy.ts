// What the inbox takes, what it tells a person, and how long it waits out an outage. Plain values (and
// one zod schema), so Node-side tests and operator tools read the same texts the agent sends.
import { z } from "zod";
import { MessageExtras } from "./telegram-message";

/** Sent at most once per message, when a reply is held up by an outage for NOTICE_AFTER_MS. */
export const OUTAGE_NOTICE = "I'm having trouble reaching my memory, I'll answer as soon as I can.";

/** Sent when a message could not be answered within the retry window (or cannot be answered at all). */
export const APOLOGY =
  "Sorry, I couldn't answer that one. I kept your message (you can see it in the web app's chat); please send it again when you like.";

/** How long a reply may be held up before the person hears about it. */
export const NOTICE_AFTER_MS = 10_000;

/** Attempts a message whose failure is not an outage (a bug, a poison input) gets before it is dead-lettered. */
export const MAX_PERMANENT_ATTEMPTS = 3;

/** Backoff between attempts while a dependency is unreachable: 1 s, 2 s, 4 s, … capped. */
export function retryDelayMs(attempt: number): number {
  return Math.min(1000 * 2 ** Math.max(0, attempt - 1), 10_000);
}

/** Longest Telegram text (or caption) the inbox stores; the webhook refuses longer ones with 400. */
export const MAX_TELEGRAM_TEXT_CHARS = 20_000;

export const TelegramInput = z.object({
  updateId: z.number().int().nonnegative(),
  chatId: z.number().int(),
  messageId: z.number().int().nonnegative(),
  text: z.string().max(MAX_TELEGRAM_TEXT_CHARS),
  /** The sender was created by this message: the reply starts with the welcome. */
  firstContact: z.boolean().default(false),
  /** A voice note or photo to read, who a forward came from, or a kind answered without the model. */
  extras: MessageExtras.optional(),
});
export type TelegramInput = z.input<typeof TelegramInput>;

export const TEXT_ONLY = "I can read text, listen to voice notes and look at photos — that one I can't read yet.";

/** What is kept of an update that could not be stored or a message set aside (agents/dead-letters.ts keeps them). */
export interface DeadLetter {
  key: string;
  origin: "webhook" | "inbox";
  personId: string | null;
  /** The sender's Telegram id: how account deletion finds a letter written before anyone knew whose it was. */
  senderId: number | null;
  updateId: number | null;
  chatId: number | null;
  text: string;
  error: string;
  attempts: number;
  firstAt: number;
  lastAt: number;
}
