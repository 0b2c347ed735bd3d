// reminder-deliver: a reminder the person asked for (schedule_create) waits until its time, then goes
// out on the channels they chose for reminders, of those they have (every one by default): Telegram,
// and a push to each device they turned notifications on in (Web Push). The events row decides, at the time it is due: it is claimed scheduled → delivering
// before the sends, in one conditional UPDATE, so a second event for the same reminder, or one the
// person cancelled (scheduled → cancelled, the same kind of UPDATE), sends nothing. A cancel that
// comes after the claim finds the reminder 'delivering' and is told it is too late.
// Each channel is a step of its own, run side by side: Inngest keeps each one's outcome, so a retry
// after one channel failed sends nothing again on the other, and one channel failing holds back none.
// A step may still run twice (Inngest runs steps at least once): each channel's send is noted in the
// reminder's row once it went out, and not repeated after; only a crash between a send and its note
// sends it again, and a push twin then replaces the first on the device (the same tag).
// A person with no channel at all has the reminder marked undeliverable, which the web app shows them.
// An occurrence of a repeating schedule plans the next one when it is done (agents/schedules/plan.ts) and
// hands it over as a new event: each occurrence is its own delayed event, so nothing scans for due ones.
// The reminder's words stay in Postgres: each send reads them from the claimed row under the person's
// own transaction, and what Inngest keeps of every step is ids and outcomes. A person deleted after the
// claim has no row left, and nothing is sent.
import { contactOf } from "../../../db/repositories/digest";
import {
  claimedReminderText,
  claimReminder,
  finishReminder,
  markReminderSent,
  reminderSentOn,
  reminderStatus,
  type ReminderChannel,
} from "../../../db/repositories/reminders";
import { zoneOrUtc } from "../../../platform/local-time";
import { chosenChannels } from "../../integrations/notices";
import { pushToPerson } from "../../integrations/push-delivery";
import { planNextOccurrence } from "../../schedules/plan";
import { pushTopic } from "../../integrations/web-push";
import type { InngestClient } from "../client";
import { telegramOf, type WorkflowDeps } from "../deps";
import { reminderCreated, type ReminderCreated } from "../events";
import { inngestSteps, type Steps } from "../steps";

/** A reminder is stale an hour after its time: a push service drops it for a device offline that long. */
const REMINDER_TTL_SECONDS = 3600;

export function reminderDeliver(inngest: InngestClient, deps: WorkflowDeps) {
  return inngest.createFunction(
    { id: "reminder-deliver", name: "Deliver a reminder", triggers: [reminderCreated], retries: 5 },
    // event.data validated against reminderCreated by the SDK (EventValidationError, not retried)
    async ({ event, step }) => deliverReminder(deps, event.data, inngestSteps(step)),
  );
}

/** The delivery of one reminder, on Inngest's steps or the agent's own (agents/local-runs.ts). */
export async function deliverReminder(deps: WorkflowDeps, reminder: ReminderCreated, step: Steps) {
  const { userId, eventId } = reminder;
  await step.sleepUntil("wait-until-due", new Date(reminder.at));
  const due = await step.run("claim", () =>
    deps.db.withUser(userId, async (tx) => {
      const claimed = await claimReminder(tx, eventId);
      if (!claimed) return { skipped: await reminderStatus(tx, eventId) };
      // The channels the person chose for reminders, of those they have (agents/integrations/notices.ts).
      const { telegram, push } = (await chosenChannels(tx, deps, "reminder")).channels;
      return { claimed: true, telegram, push, ...(claimed.scheduleId ? { scheduleId: claimed.scheduleId } : {}) };
    }),
  );
  if ("skipped" in due) {
    return {
      delivered: false,
      reason: due.skipped === "cancelled" ? "cancelled by the person" : "not scheduled (already delivered or removed)",
    };
  }
  // An occurrence of a repeating schedule: the next one is planned and handed over, whatever became of this one.
  const planNext = async () => {
    const scheduleId = "scheduleId" in due ? due.scheduleId : undefined;
    if (!scheduleId) return;
    const next = await step.run("plan-next", () =>
      deps.db.withUser(userId, async (tx) =>
        planNextOccurrence(tx, userId, scheduleId, new Date(reminder.at), zoneOrUtc((await contactOf(tx))?.timezone)),
      ),
    );
    if (next) await step.sendEvent("hand-over-next", reminderCreated.create({ userId, ...next }, { id: `reminder-${next.eventId}` }));
  };
  if (!due.telegram && !due.push) {
    await step.run("no-channel", () => deps.db.withUser(userId, (tx) => finishReminder(tx, eventId, "undeliverable")));
    await planNext();
    return { delivered: false, reason: "the person has no Telegram chat and no device with notifications on" };
  }
  /** The claimed reminder's words, or null once it is gone (deleted with the account). */
  const words = () => deps.db.withUser(userId, (tx) => claimedReminderText(tx, eventId));
  /** Runs one channel's `send` unless it already took this reminder, and notes it when it did. */
  const once = async (channel: ReminderChannel, send: () => Promise<string>) => {
    if (await deps.db.withUser(userId, (tx) => reminderSentOn(tx, eventId, channel))) return "sent";
    const outcome = await send();
    if (outcome === "sent") await deps.db.withUser(userId, (tx) => markReminderSent(tx, eventId, channel));
    return outcome;
  };
  // Settled, not all: a channel whose step failed for good (its retries spent) fails only itself.
  const [telegram, push] = (
    await Promise.allSettled([
      due.telegram
        ? step.run("send-telegram", async () => {
            const text = await words();
            const chatId = (await deps.db.withUser(userId, contactOf))?.chatId ?? null;
            if (text === null) return "gone";
            if (chatId === null) return "no-chat"; // unlinked since the claim
            return once("telegram", async () => {
              await telegramOf(deps).sendText(chatId, `⏰ Reminder: ${text}`);
              return "sent";
            });
          })
        : null,
      due.push
        ? step.run("send-push", async () => {
            const text = await words();
            if (text === null) return "gone";
            return once("push", async () => {
              const report = await pushToPerson(
                deps,
                userId,
                { title: "⏰ Reminder", body: text, tag: `reminder-${eventId}`, url: "/app/reminders", at: reminder.at },
                { ttlSeconds: REMINDER_TTL_SECONDS, urgency: "high", topic: pushTopic(eventId) },
              );
              // No device took it but one may yet: Inngest tries the step again (the others are not resent).
              if (report.sent === 0 && report.retry > 0) throw new Error(`push: ${report.retry} push services did not answer`);
              return report.sent > 0 ? "sent" : "no-device";
            });
          })
        : null,
    ])
  ).map((settled) => (settled.status === "fulfilled" ? settled.value : "failed"));
  if (telegram === "gone" || push === "gone") return { delivered: false, reason: "removed before it was sent" };
  const sent = telegram === "sent" || push === "sent";
  await step.run("finish", () => deps.db.withUser(userId, (tx) => finishReminder(tx, eventId, sent ? "delivered" : "undeliverable")));
  await planNext();
  const channels = [...(telegram === "sent" ? ["telegram"] : []), ...(push === "sent" ? ["push"] : [])];
  return sent ? { delivered: true, channels } : { delivered: false, reason: "no channel took it" };
}
