// reminder-deliver: a reminder the person asked for (schedule_create) waits until its time, then goes
// out in Telegram. The events row decides: it is claimed scheduled → delivering before the send, so a
// second event for the same reminder (or a cancelled one) sends nothing.
import { contactOf, claimReminder, finishReminder } from "../../../db/repositories/digest";
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
          return claimed ? { text: claimed.text, chatId: (await contactOf(tx))?.chatId ?? null } : null;
        }),
      );
      if (!due) return { delivered: false, reason: "not scheduled (already delivered or removed)" };
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
