// The conversation as the agent keeps it (AI SDK UI messages): how a person's message is written into
// it, and how a turn's reply is found after it. Pure functions over the message list.
import type { UIMessage } from "ai";
import type { SourceRef } from "../db/repositories/memory";

export interface MessageSource {
  source?: SourceRef;
  /** When the person wrote it, or when the reply was written (ISO 8601): the chat shows it. */
  at?: string;
}

/** A person's message in the conversation, with where it came from (the provenance of what it teaches). */
export function userMessage(id: string, text: string, source: SourceRef, at: Date = new Date()): UIMessage {
  return {
    id,
    role: "user",
    parts: [{ type: "text", text }],
    metadata: { source: { ...source, payload: { text } }, at: at.toISOString() } satisfies MessageSource,
  };
}

/** The text parts of a message, joined. */
export function textOf(message: UIMessage): string {
  return message.parts
    .map((part) => (part.type === "text" ? part.text : ""))
    .join("")
    .trim();
}

/** The assistant's text right after the user message `id`, or null if there is none yet. */
export function replyAfter(messages: readonly UIMessage[], id: string): string | null {
  const index = messages.findIndex((m) => m.id === id);
  const next = index >= 0 ? messages[index + 1] : undefined;
  return next?.role === "assistant" ? textOf(next) : null;
}

/** Ids of the assistant messages that follow the user message `id`, up to the next user message. */
export function replyIds(messages: readonly UIMessage[], id: string): string[] {
  const index = messages.findIndex((m) => m.id === id);
  if (index < 0) return [];
  const ids: string[] = [];
  for (const message of messages.slice(index + 1)) {
    if (message.role === "user") break;
    ids.push(message.id);
  }
  return ids;
}
