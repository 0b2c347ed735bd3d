// A message Soma sends on its own (the morning brief, the weekly review) delivered on the channels the
// person chose for its kind (./channels.ts): Telegram and a push to their devices, side by side, one
// failing holding back neither. Throws only when nothing went out and a channel failed, for the
// caller's step to be retried (a channel that did take it then may get it twice; the reminders, which
// matter more, keep each channel's outcome: agents/workflows/functions/reminder-deliver.ts).
import type { Database, Tx } from "../../db/database";
import { contactOf } from "../../db/repositories/digest";
import { hasPushDevice } from "../../db/repositories/push-subscriptions";
import type { Config } from "../../platform/config";
import { channelsFor, type Channels, type NoticeKind } from "./channels";
import { pushToPerson } from "./push-delivery";
import type { TelegramSender } from "./telegram-sender";
import { pushConfigured, type PushOptions } from "./web-push";

export interface NoticeDeps {
  db: Database;
  config: Config;
  telegram: TelegramSender | null;
}

/**
 * The channels `kind` goes to for the person in `tx` (Database.withUser): of those they have — a
 * Telegram chat (with a bot configured), devices with notifications on (with VAPID keys) — the ones they
 * chose for it (./channels.ts). Both false: Soma cannot reach them at all. Read once, in one transaction,
 * by every sender of a message Soma sends on its own (reminders, the brief, the review).
 */
export async function chosenChannels(
  tx: Tx,
  deps: Pick<NoticeDeps, "config" | "telegram">,
  kind: NoticeKind,
): Promise<{ channels: Channels; chatId: number | null }> {
  const contact = await contactOf(tx);
  const chatId = deps.telegram ? (contact?.chatId ?? null) : null;
  const available = { telegram: chatId !== null, push: pushConfigured(deps.config) && (await hasPushDevice(tx)) };
  return { channels: channelsFor(kind, contact?.notify, available), chatId };
}

/** Sends `text` as `kind` on the person's chosen channels; which of them took it. */
export async function deliverNotice(
  deps: NoticeDeps,
  userId: string,
  kind: NoticeKind,
  notice: { text: string; title: string; url: string; options: PushOptions },
): Promise<{ telegram: boolean; push: boolean }> {
  const { channels, chatId } = await deps.db.withUser(userId, (tx) => chosenChannels(tx, deps, kind));
  const [telegram, push] = await Promise.allSettled([
    channels.telegram && chatId !== null && deps.telegram ? deps.telegram.sendText(chatId, notice.text).then(() => true) : false,
    channels.push
      ? pushToPerson(
          deps,
          userId,
          { title: notice.title, body: notice.text, tag: kind, url: notice.url, at: new Date().toISOString() },
          notice.options,
        ).then((report) => report.sent > 0)
      : false,
  ]);
  const took = { telegram: telegram.status === "fulfilled" && telegram.value, push: push.status === "fulfilled" && push.value };
  // Nothing went out and a channel failed (rather than having no device left): the caller's step is retried.
  const failure = telegram.status === "rejected" ? telegram.reason : push.status === "rejected" ? push.reason : null;
  if (!took.telegram && !took.push && failure) throw failure;
  return took;
}
