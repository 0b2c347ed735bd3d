// A Telegram message's turn in the person's conversation, as the inbox asks for it (agents/inbox.ts):
// the message read (a voice note transcribed, a photo fetched: agents/telegram-input.ts), the model's
// reply grown in a draft while it is written (agents/telegram-draft.ts), a failed attempt's words
// removed so the retry starts from the message again, a photo's bytes dropped once answered; and, when
// the inbox gives up, the message kept with the apology after it. The agent (agents/user-agent.ts)
// owns the conversation; this is what a Telegram turn does with it, through ConversationHost.
import type { UIMessage } from "ai";
import { DraftStream } from "./telegram-draft";
import type { InboxItem, Reply } from "./inbox";
import { sourceOf } from "./inbox";
import { APOLOGY } from "./inbox-policy";
import type { TelegramSender } from "./integrations/telegram-sender";
import { type InputDeps, replyPrefix, telegramTurnInput, withoutImages } from "./telegram-input";
import { replyAfter, replyIds, userMessage } from "./transcript";

/** The agent's conversation, as a Telegram turn uses it. */
export interface ConversationHost {
  messages(): readonly UIMessage[];
  /** Runs a turn over the conversation `update` gives (the chat protocol's saveMessages). */
  saveMessages(
    update: (messages: readonly UIMessage[]) => UIMessage[],
    options: { signal: AbortSignal },
  ): Promise<{ status: string; error?: string }>;
  persistMessages(messages: UIMessage[]): Promise<void>;
  dropMessages(ids: string[]): Promise<void>;
  /** Why this message's turn failed, if it did (reported by the turn), taken once. */
  takeFailure(messageId: string): unknown;
  /** Drafts of replies being written, by the message's external id: the turn's chunks feed them. */
  drafts: Map<string, DraftStream>;
  sender(): TelegramSender;
  typing(chatId: number): void;
  inputDeps(item: InboxItem): InputDeps;
}

/** The model's answer to a Telegram message, as Markdown. Throws when it cannot be answered now (the inbox retries). */
export async function telegramTurnReply(host: ConversationHost, item: InboxItem, signal: AbortSignal): Promise<Reply> {
  const messageId = item.id;
  const answer = (text: string | null) => ({
    markdown: replyPrefix(host.messages().find((m) => m.id === messageId)) + (text || APOLOGY),
  });
  // A turn that completed before the agent stopped is not run again.
  const answered = replyAfter(host.messages(), messageId);
  if (answered !== null) return answer(answered);
  host.typing(item.chat_id);
  const source = sourceOf(item);
  // A re-run after the person wrote elsewhere meanwhile: their message moves to the end, so that the
  // turn answers it (a turn answers the newest user message).
  const lastUser = [...host.messages()].reverse().find((m) => m.role === "user");
  if (lastUser && lastUser.id !== messageId && host.messages().some((m) => m.id === messageId)) await host.dropMessages([messageId]);
  const present = host.messages().some((m) => m.id === messageId);
  const input = present ? null : await telegramTurnInput(item, source, host.inputDeps(item), signal);
  if (input?.kind === "reply") return input.reply;
  const draft = new DraftStream({
    draft: (text) => host.sender().draft(item.chat_id, item.sort_key % 2_147_483_647 || 1, text),
    typing: () => host.typing(item.chat_id),
  });
  host.drafts.set(source.externalId, draft);
  const result = await host
    .saveMessages((messages) => (input ? [...messages, input.message] : [...messages]), { signal })
    .finally(() => {
      draft.close();
      host.drafts.delete(source.externalId);
    });
  const failure = host.takeFailure(messageId);
  if (failure !== undefined || result.status !== "completed") {
    // What the failed attempt said is not the answer: the next attempt starts from the message again.
    await host.dropMessages(replyIds(host.messages(), messageId));
    throw (
      failure ??
      (result.status === "error"
        ? new Error(result.error ?? "the turn failed")
        : new DOMException(`the turn was ${result.status}`, "AbortError"))
    );
  }
  // Answered: a photo's bytes leave the conversation (what was learned stays in memory).
  await forgetImages(host);
  // A turn that ended on tool calls alone has no text; Telegram refuses an empty message.
  return answer(replyAfter(host.messages(), messageId));
}

/**
 * The inbox gave up on a message: it stays in the conversation with the apology after it (the person
 * sees it in the web app), whatever the failed attempts said removed, and no image bytes left behind.
 */
export async function keepWithApology(host: ConversationHost, item: InboxItem): Promise<void> {
  if (item.kind !== "message" || !item.text.trim()) return;
  await host.dropMessages(replyIds(host.messages(), item.id));
  const present = host.messages().some((m) => m.id === item.id);
  const apology: UIMessage = {
    id: `apology-${item.id}`,
    role: "assistant",
    parts: [{ type: "text", text: APOLOGY }],
    metadata: { at: new Date().toISOString() },
  };
  await host.persistMessages([
    ...host
      .messages()
      .filter((m) => m.id !== apology.id)
      .map(withoutImages),
    ...(present ? [] : [userMessage(item.id, item.text, sourceOf(item), new Date(item.received_at))]),
    apology,
  ]);
}

/** Replaces every image in the conversation by a word. */
export async function forgetImages(host: Pick<ConversationHost, "messages" | "persistMessages">): Promise<void> {
  if (!host.messages().some((m) => m.parts.some((p) => p.type === "file"))) return;
  await host.persistMessages(host.messages().map(withoutImages));
}
