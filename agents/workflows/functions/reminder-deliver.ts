// reminder-deliver: a reminder the person asked for (schedule_create) waits until its time, then goes
// out in Telegram. The events row decides, at the time it is due: it is claimed scheduled → delivering
// before the send, in one conditional UPDATE, so a second event for the same reminder, or one the
// person cancelled (scheduled → cancelled, the same kind of UPDATE), sends nothing. A cancel that
// comes after the claim finds the reminder 'delivering' and is told it is too late.
// The reminder's words stay in Postgres: "send" reads them from the claimed row under the person's own
// transaction, and what Inngest keeps of every step is ids and outcomes. A person deleted after the
// claim has no row left, and nothing is sent.
import { contactOf } from "../../../db/repositories/digest";
import { claimedReminderText, claimReminder, finishReminder, reminderStatus } from "../../../db/repositories/reminders";
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
          if (await claimReminder(tx, reminder.eventId)) return { claimed: true, reachable: Boolean((await contactOf(tx))?.chatId) };
          return { skipped: await reminderStatus(tx, reminder.eventId) };
        }),
      );
      if ("skipped" in due) {
        return {
          delivered: false,
          reason: due.skipped === "cancelled" ? "cancelled by the person" : "not scheduled (already delivered or removed)",
        };
      }
      if (!due.reachable) {
        await step.run("no-chat", () => deps.db.withUser(reminder.userId, (tx) => finishReminder(tx, reminder.eventId, "undeliverable")));
        return { delivered: false, reason: "the person has no Telegram chat" };
      }
      const sent = await step.run("send", async () => {
        const claimed = await deps.db.withUser(reminder.userId, async (tx) => {
          const text = await claimedReminderText(tx, reminder.eventId);
          if (text === null) return null;
          const chatId = (await contactOf(tx))?.chatId ?? null;
          // Telegram was unlinked since the claim: the reminder ends here rather than stay claimed.
          if (chatId === null) await finishReminder(tx, reminder.eventId, "undeliverable");
          return { text, chatId };
        });
        if (!claimed) return "gone";
        if (claimed.chatId === null) return "no-chat";
        await telegramOf(deps).sendText(claimed.chatId, `⏰ Reminder: ${claimed.text}`);
        return "sent";
      });
      if (sent === "gone") return { delivered: false, reason: "removed before it was sent" };
      if (sent === "no-chat") return { delivered: false, reason: "the person has no Telegram chat" };
      await step.run("mark-delivered", () => deps.db.withUser(reminder.userId, (tx) => finishReminder(tx, reminder.eventId, "delivered")));
      return { delivered: true };
    },
  );
}
