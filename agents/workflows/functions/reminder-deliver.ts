// reminder-deliver: a reminder the person asked for (schedule_create) waits until its time, then goes
// out on every channel they have: Telegram, and a push to each device they turned notifications on in
// (Web Push). The events row decides, at the time it is due: it is claimed scheduled → delivering
// before the sends, in one conditional UPDATE, so a second event for the same reminder, or one the
// person cancelled (scheduled → cancelled, the same kind of UPDATE), sends nothing. A cancel that
// comes after the claim finds the reminder 'delivering' and is told it is too late.
// Each channel is a step of its own, run side by side: Inngest keeps each one's outcome, so a retry
// after one channel failed sends nothing again on the other, and one channel failing holds back none.
// A person with no channel at all has the reminder marked undeliverable, which the web app shows them.
// The reminder's words stay in Postgres: each send reads them from the claimed row under the person's
// own transaction, and what Inngest keeps of every step is ids and outcomes. A person deleted after the
// claim has no row left, and nothing is sent.
import { contactOf } from "../../../db/repositories/digest";
import { hasPushDevice } from "../../../db/repositories/push-subscriptions";
import { claimedReminderText, claimReminder, finishReminder, reminderStatus } from "../../../db/repositories/reminders";
import { pushToPerson } from "../../integrations/push-delivery";
import { pushConfigured, pushTopic } from "../../integrations/web-push";
import type { InngestClient } from "../client";
import { telegramOf, type WorkflowDeps } from "../deps";
import { reminderCreated } from "../events";

/** A reminder is stale an hour after its time: a push service drops it for a device offline that long. */
const REMINDER_TTL_SECONDS = 3600;

export function reminderDeliver(inngest: InngestClient, deps: WorkflowDeps) {
  return inngest.createFunction(
    { id: "reminder-deliver", name: "Deliver a reminder", triggers: [reminderCreated], retries: 5 },
    async ({ event, step }) => {
      const reminder = event.data; // validated against reminderCreated by the SDK (EventValidationError, not retried)
      const { userId, eventId } = reminder;
      await step.sleepUntil("wait-until-due", new Date(reminder.at));
      const due = await step.run("claim", () =>
        deps.db.withUser(userId, async (tx) => {
          if (!(await claimReminder(tx, eventId))) return { skipped: await reminderStatus(tx, eventId) };
          const push = pushConfigured(deps.config) && (await hasPushDevice(tx));
          return { claimed: true, telegram: Boolean((await contactOf(tx))?.chatId), push };
        }),
      );
      if ("skipped" in due) {
        return {
          delivered: false,
          reason: due.skipped === "cancelled" ? "cancelled by the person" : "not scheduled (already delivered or removed)",
        };
      }
      if (!due.telegram && !due.push) {
        await step.run("no-channel", () => deps.db.withUser(userId, (tx) => finishReminder(tx, eventId, "undeliverable")));
        return { delivered: false, reason: "the person has no Telegram chat and no device with notifications on" };
      }
      /** The claimed reminder's words, or null once it is gone (deleted with the account). */
      const words = () => deps.db.withUser(userId, (tx) => claimedReminderText(tx, eventId));
      const [telegram, push] = await Promise.all([
        due.telegram
          ? step.run("send-telegram", async () => {
              const text = await words();
              const chatId = (await deps.db.withUser(userId, contactOf))?.chatId ?? null;
              if (text === null) return "gone";
              if (chatId === null) return "no-chat"; // unlinked since the claim
              await telegramOf(deps).sendText(chatId, `⏰ Reminder: ${text}`);
              return "sent";
            })
          : null,
        due.push
          ? step.run("send-push", async () => {
              const text = await words();
              if (text === null) return "gone";
              const report = await pushToPerson(
                deps,
                userId,
                { title: "⏰ Reminder", body: text, tag: `reminder-${eventId}`, url: "/app/reminders", at: reminder.at },
                { ttlSeconds: REMINDER_TTL_SECONDS, urgency: "high", topic: pushTopic(eventId) },
              );
              // No device took it but one may yet: Inngest tries the step again (the others are not resent).
              if (report.sent === 0 && report.retry > 0) throw new Error(`push: ${report.retry} push services did not answer`);
              return report.sent > 0 ? "sent" : "no-device";
            })
          : null,
      ]);
      if (telegram === "gone" || push === "gone") return { delivered: false, reason: "removed before it was sent" };
      const sent = telegram === "sent" || push === "sent";
      await step.run("finish", () => deps.db.withUser(userId, (tx) => finishReminder(tx, eventId, sent ? "delivered" : "undeliverable")));
      const channels = [...(telegram === "sent" ? ["telegram"] : []), ...(push === "sent" ? ["push"] : [])];
      return sent ? { delivered: true, channels } : { delivered: false, reason: "no channel took it" };
    },
  );
}
