// mail-ingest: a Gmail notification for a connected mailbox → the messages added to INBOX since the
// stored history id, each recorded once (a `sources` row per message id, a `person` entity for the
// sender, an `email_received` event). A history id Gmail no longer has (404) → a bounded resync of the
// newest mail and a fresh position, never a loop. One run at a time per person.
// One email never blocks the intake (issue 12, finding 3): its texts are made storable, and a message
// the store still refuses for good is logged with its Gmail id and skipped, so the rest of the batch is
// stored and the position saved. An outage (Postgres unreachable, a serialization conflict) is not a
// refusal: the step fails and is retried, and nothing is skipped.
import { NonRetriableError } from "inngest";
import { saveMailState } from "../../../db/repositories/connections";
import { recordEmail, senderEntityName, storableEmail } from "../../../db/repositories/mail";
import { classifyFailure } from "../../../platform/faults";
import { describeError, logJson } from "../../../platform/log";
import { GmailError, headerOf, parseMailbox, type GmailClient } from "../../integrations/google/gmail-client";
import { gmailFor } from "../../integrations/google/google-account";
import { embedOne } from "../../integrations/model/embeddings";
import type { InngestClient } from "../client";
import { chunks, type WorkflowDeps } from "../deps";
import { mailNotificationReceived } from "../events";

/** Messages one run reads at most; the rest wait for the next notification. */
export const MAX_MESSAGES_PER_RUN = 100;
/** Messages read back after a lost position. */
export const RESYNC_MESSAGES = 25;
const MAX_HISTORY_PAGES = 5;
const MESSAGES_PER_STEP = 20;

export function mailIngest(inngest: InngestClient, deps: WorkflowDeps) {
  return inngest.createFunction(
    {
      id: "mail-ingest",
      name: "Ingest new Gmail messages",
      triggers: [mailNotificationReceived],
      concurrency: { key: "event.data.userId", limit: 1 },
      retries: 5,
    },
    async ({ event, step }) => {
      const note = event.data; // validated against mailNotificationReceived by the SDK (EventValidationError, not retried)
      const plan = await step.run("list-new-messages", async () => {
        const account = await gmailFor(deps.config, deps.db, note.userId);
        if (!account) return null;
        return gmailCall(() => newMessages(account.gmail, account.connection.gmailHistoryId, note.historyId));
      });
      if (!plan) return { skipped: "no Google connection" };

      let recorded = 0;
      const unstorable: string[] = [];
      for (const [i, ids] of chunks(plan.messageIds, MESSAGES_PER_STEP).entries()) {
        const batch = await step.run(`ingest-${i}`, async () => {
          const outcome = { recorded: 0, unstorable: [] as string[] };
          const account = await gmailFor(deps.config, deps.db, note.userId);
          if (!account) return outcome;
          for (const id of ids) {
            const result = await ingestMessage(deps, account.gmail, note.userId, id);
            if (result === "recorded") outcome.recorded++;
            if (result === "unstorable") outcome.unstorable.push(id);
          }
          return outcome;
        });
        recorded += batch.recorded;
        unstorable.push(...batch.unstorable);
      }
      await step.run("save-position", () => deps.db.withUser(note.userId, (tx) => saveMailState(tx, { historyId: plan.historyId })));
      return {
        listed: plan.messageIds.length,
        recorded,
        ...(unstorable.length ? { unstorable } : {}),
        resynced: plan.resynced,
        historyId: plan.historyId,
      };
    },
  );
}

/** The INBOX messages added since `startHistoryId`, and the position to store afterwards. */
async function newMessages(gmail: GmailClient, startHistoryId: string | null, notifiedHistoryId: string) {
  if (startHistoryId) {
    try {
      const ids: string[] = [];
      let position = startHistoryId;
      let pageToken: string | undefined;
      for (let page = 0; page < MAX_HISTORY_PAGES; page++) {
        const history = await gmail.history(startHistoryId, pageToken);
        for (const record of history.history ?? []) {
          if (ids.length >= MAX_MESSAGES_PER_RUN) return { messageIds: ids, historyId: position, resynced: false };
          for (const added of record.messagesAdded ?? []) if (!ids.includes(added.message.id)) ids.push(added.message.id);
          position = record.id;
        }
        pageToken = history.nextPageToken;
        // Gmail's own position, never the notification's: a push can name a history id that
        // history.list does not reach yet, and storing that would skip the mail in between.
        if (!pageToken) return { messageIds: ids, historyId: history.historyId, resynced: false };
      }
      return { messageIds: ids, historyId: position, resynced: false };
    } catch (error) {
      // Gmail keeps about a week of history; an older position is gone for good.
      if (!(error instanceof GmailError && error.status === 404)) throw error;
    }
  }
  const recent = await gmail.recentMessages(RESYNC_MESSAGES);
  return { messageIds: (recent.messages ?? []).map((m) => m.id), historyId: notifiedHistoryId, resynced: true };
}

/**
 * Reads one message's metadata and records it: "known" when it was already recorded or is gone,
 * "unstorable" when the store refused it for good (logged with its Gmail message id, then skipped).
 */
async function ingestMessage(
  deps: WorkflowDeps,
  gmail: GmailClient,
  userId: string,
  id: string,
): Promise<"recorded" | "known" | "unstorable"> {
  const message = await gmailCall(() => gmail.message(id)).catch((error: unknown) => {
    if (error instanceof NonRetriableError && /answered 404/.test(error.message)) return null; // deleted since
    throw error;
  });
  if (!message) return "known";
  const received = message.internalDate ? new Date(Number(message.internalDate)) : new Date(headerOf(message, "Date") ?? Date.now());
  const email = storableEmail({
    messageId: message.id,
    threadId: message.threadId ?? null,
    from: parseMailbox(headerOf(message, "From")) ?? { name: null, email: "unknown@unknown" },
    subject: headerOf(message, "Subject") ?? "(no subject)",
    receivedAt: Number.isNaN(received.getTime()) ? new Date() : received,
    snippet: message.snippet ?? "",
  });
  const embedding = await embedOne(deps.embedder, `person: ${senderEntityName(email.from)}`);
  try {
    const result = await deps.db.withUser(userId, (tx) => recordEmail(tx, userId, email, embedding));
    return result.created ? "recorded" : "known";
  } catch (error) {
    if (classifyFailure(error) === "transient") throw error;
    // The transaction rolled back whole: no half-recorded message. Only the database's own words are
    // logged (drizzle's message would repeat the email's texts as query parameters).
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
    logJson("error", {
      workflow: "mail-ingest",
      userId,
      messageId: message.id,
      skipped: true,
      code: (cause as { code?: unknown }).code,
      error: describeError(cause),
    });
    return "unstorable";
  }
}

/** Gmail refusals that a retry cannot fix (other than 401, which the client already retried) stop the run. */
async function gmailCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof GmailError && !error.transient) throw new NonRetriableError(error.message, { cause: error });
    throw error;
  }
}
