// reminder-deliver: a reminder the person asked for (schedule_create) waits until its time, then goes
// out in Telegram. The events row decides, at the time it is due: it is claimed scheduled → delivering
// before the send, in one conditional UPDATE, so a second event for the same reminder, or one the
// person cancelled (scheduled → cancelled, the same kind of UPDATE), sends nothing. A cancel that
// comes after the claim finds the reminder 'delivering' and is told it is too late.
import { contactOf } from "../../../db/repositories/digest";
import { claimReminder, finishReminder, reminderStatus } from "../../../db/repositories/reminders";
import type { InngestClient } from "../client";
import { telegramOf, type WorkflowDeps } from "../deps";
import { reminderCreated } from "../events";

export function reminderDeliver(inngest: InngestClient, deps: WorkflowDeps) {
  return inngest.createFunction(
    { id: "reminder-deliver", name: "Deliver a reminder", triggers: [reminderCreated], retries: 5 },
    async ({ event, step }) => {
      const reminder = event.data; // validated against reminderCreated by the SDK (EventValidationError, not retried)
      await step.sleepUntil("wait-until-due", new Date(reminder.at));
      const due = await step.run("claim", () =>
        deps.db.withUser(reminder.userId, async (tx) => {
          const claimed = await claimReminder(tx, reminder.eventId);
          if (claimed) return { text: claimed.text, chatId: (await contactOf(tx))?.chatId ?? null };
          return { skipped: await reminderStatus(tx, reminder.eventId) };
        }),
      );
      if ("skipped" in due) {
        return {
          delivered: false,
          reason: due.skipped === "cancelled" ? "cancelled by the person" : "not scheduled (already delivered or removed)",
        };
      }
      if (due.chatId === null) {
        await step.run("no-chat", () => deps.db.withUser(reminder.userId, (tx) => finishReminder(tx, reminder.eventId, "undeliverable")));
        return { delivered: false, reason: "the person has no Telegram chat" };
      }
      await step.run("send", () => telegramOf(deps).sendText(due.chatId!, `⏰ Reminder: ${due.text}`));
      await step.run("mark-delivered", () => deps.db.withUser(reminder.userId, (tx) => finishReminder(tx, reminder.eventId, "delivered")));
      return { delivered: true };
    },
  );
}
