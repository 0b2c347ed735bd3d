// What follows a turn in the background: the person's message recorded where fact extraction reads it,
// and conversation/turn.completed sent to the workflow engine (fact-extract). In dev mode with no
// Inngest dev server to take it (a newcomer's `npm start`), the agent extracts the facts itself instead,
// so that "I live in Lisbon" is known from the next message on; and the next turn of that person waits
// for it (readAfterTurn), so "where do I live?" right after is answered from it, never raced. And a web
// reply that finished while the person had the app closed reaches their devices as a push (replyReady).
import { forgetUnusedMessage, recordMessage, type SourceRef } from "../../db/repositories/memory";
import type { Config } from "../../platform/config";
import type { Channel } from "../../platform/channel";
import { describeError, logJson } from "../../platform/log";
import { extractAndRecord, type FactRecordingDeps } from "../fact-recording";
import { contactOf } from "../../db/repositories/digest";
import { channelsFor } from "../integrations/channels";
import { pushToPerson } from "../integrations/push-delivery";
// Only in dev mode without Inngest Cloud (devWithoutCloud) does the agent extract facts itself.
import { canSendEvents, devWithoutCloud, emitEvents } from "../workflows/client";
import { turnCompleted } from "../workflows/events";

/** What of the turn (agents/turn/turn.ts) follows it. */
interface Turn extends FactRecordingDeps {
  userId: string;
  config: Config;
}

/** The longest a turn waits for the previous turn's facts (a local model extracting them, say). */
const AFTER_TURN_WAIT_MS = 15_000;

/** Per person, the previous turn's extraction in this agent while it runs (dev mode only). */
const pending = new Map<string, Promise<void>>();

/** Waits (bounded, never throwing) until what followed this person's previous turn is done. */
export async function readAfterTurn(userId: string): Promise<void> {
  const work = pending.get(userId);
  if (!work) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, AFTER_TURN_WAIT_MS)))]);
  clearTimeout(timer);
}

/** Starts what follows the turn (never throws); the turn hands the promise to waitUntil. */
export function afterTurn(turn: Turn, channel: Channel, source: SourceRef, text: string): Promise<void> {
  const work = announceTurn(turn, channel, source, text);
  if (!devWithoutCloud(turn.config)) return work;
  const { userId } = turn;
  pending.set(userId, work);
  return work.finally(() => {
    if (pending.get(userId) === work) pending.delete(userId);
  });
}

/**
 * Records the message where fact-extract reads it (its `sources` row, in Postgres) and then names it in
 * conversation/turn.completed: the event carries ids, never the words, so Inngest's run history keeps
 * none and deleting the account deletes them. Never throws; without a recorded message, no event.
 */
async function announceTurn(turn: Turn, channel: Channel, source: SourceRef, text: string): Promise<void> {
  const { config, userId } = turn;
  if (!canSendEvents(config)) return;
  const message = { kind: source.kind, externalId: source.externalId };
  try {
    await turn.db.withUser(userId, (tx) => recordMessage(tx, userId, message, text));
  } catch (error) {
    // The database's own words only: the query error would repeat the message as a parameter.
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
    logJson("warn", { agent: userId, workflows: "message not recorded: no fact extraction for it", error: describeError(cause) });
    return;
  }
  const event = turnCompleted.create({ userId, channel, source: message }, { id: `turn-${userId}-${source.externalId}` });
  if (await emitEvents(config, event, { agent: userId })) return;
  try {
    if (devWithoutCloud(config)) {
      const today = new Date().toISOString().slice(0, 10);
      // Bounded like the next turn's wait for it: a model that hangs here holds nothing up for long.
      await extractAndRecord(turn, { userId, source: message }, today, AbortSignal.timeout(AFTER_TURN_WAIT_MS));
      return;
    }
    // Nobody will read it: unless the turn's tools made something of it, the message's row goes again.
    await turn.db.withUser(userId, (tx) => forgetUnusedMessage(tx, userId, message));
  } catch (error) {
    logJson("warn", { agent: userId, facts: "not extracted", error: describeError(error) });
  }
}

/** The first words of a reply, as a notification shows them. */
const REPLY_PREVIEW_CHARS = 140;

/**
 * A web reply that finished while the person had no window of the app open: a push to their devices
 * ("Soma answered" and its first words; a tap opens the chat). Stale after a day, and a newer one
 * replaces an older one not yet shown (one topic). Never throws.
 */
export async function replyReady(turn: Turn, reply: string): Promise<void> {
  const words = reply
    .replace(/[*_`#>[\]]/g, "")
    .replace(/\s+/g, " ")
    .trim();
  const body = words.length > REPLY_PREVIEW_CHARS ? `${words.slice(0, REPLY_PREVIEW_CHARS - 1)}…` : words;
  try {
    // Unless the person turned these off (agents/integrations/channels.ts).
    const contact = await turn.db.withUser(turn.userId, contactOf);
    if (!channelsFor("reply", contact?.notify, { telegram: false, push: true }).push) return;
    await pushToPerson(
      turn,
      turn.userId,
      { title: "Soma answered", body, tag: "reply", url: "/app", at: new Date().toISOString() },
      { ttlSeconds: 86_400, urgency: "normal", topic: "reply" },
    );
  } catch (error) {
    logJson("warn", { agent: turn.userId, push: "reply not pushed", error: describeError(error) });
  }
}
