// Mail ingestion: one Gmail message → a `sources` row (unique per message id, so a duplicate push or a
// replayed history page does nothing), a `person` entity for the sender and an `email_received` event.
import type { Tx } from "../database";
import { events } from "../schema";
import { captureEntity, claimSource } from "./memory";

export interface EmailMetadata {
  messageId: string;
  threadId: string | null;
  from: { name: string | null; email: string };
  subject: string;
  receivedAt: Date;
  snippet: string;
}

/** Records one received email; `created` is false when this message was already ingested. */
export async function recordEmail(
  tx: Tx,
  userId: string,
  email: EmailMetadata,
  senderEmbedding: number[] | null,
): Promise<{ created: boolean; personId?: string; eventId?: string }> {
  const sourceId = await claimSource(tx, userId, {
    kind: "gmail",
    externalId: email.messageId,
    payload: { from: email.from, subject: email.subject, threadId: email.threadId, text: `Email from ${senderLabel(email.from)}: ${email.subject}` },
  });
  if (!sourceId) return { created: false };

  const person = await captureEntity(tx, userId, {
    type: "person",
    name: email.from.name ?? email.from.email,
    properties: { email: email.from.email },
    embedding: senderEmbedding,
    sourceId,
  });
  const [event] = await tx
    .insert(events)
    .values({
      userId,
      kind: "email_received",
      occurredAt: email.receivedAt,
      payload: { subject: email.subject, from: email.from, snippet: email.snippet.slice(0, 300), messageId: email.messageId },
      entityIds: [person.entityId],
      sourceId,
    })
    .returning({ id: events.id });
  return { created: true, personId: person.entityId, eventId: event?.id };
}

export function senderLabel(from: { name: string | null; email: string }): string {
  return from.name ? `${from.name} <${from.email}>` : from.email;
}
