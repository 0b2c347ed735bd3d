// Mail ingestion: one Gmail message → a `sources` row (unique per message id, so a duplicate push or a
// replayed history page does nothing), a `person` entity for the sender and an `email_received` event.
// Everything in an email is the sender's to choose, so every text is made storable first (issue 12,
// finding 3): a kilobytes-long display name once failed the entity's name index and, with it, the
// person's whole mail intake.
import type { Tx } from "../database";
import { events } from "../schema";
import { cut, LONE_SURROGATE } from "../../platform/clean-text";
import { captureEntity, claimSource, nameKeyFits } from "./memory";

/** The `sources.kind` of a Gmail message: what marks memory content as written by someone else. */
export const MAIL_SOURCE_KIND = "gmail";
/** Longest sender name and subject kept, in characters. */
export const MAX_MAIL_TEXT = 200;
/** RFC 5321's limit on an address. */
const MAX_ADDRESS = 254;
const MAX_SNIPPET = 300;
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching C0/C1 control characters is the point: they become spaces in the header text kept.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]+/g;

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
  email = storableEmail(email);
  const sourceId = await claimSource(tx, userId, {
    kind: MAIL_SOURCE_KIND,
    externalId: email.messageId,
    payload: {
      from: email.from,
      subject: email.subject,
      threadId: email.threadId,
      text: `Email from ${senderLabel(email.from)}: ${email.subject}`,
    },
  });
  if (!sourceId) return { created: false };

  const person = await captureEntity(tx, userId, {
    type: "person",
    name: senderEntityName(email.from),
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
      payload: { subject: email.subject, from: email.from, snippet: email.snippet, messageId: email.messageId },
      entityIds: [person.entityId],
      sourceId,
    })
    .returning({ id: events.id });
  return { created: true, personId: person.entityId, eventId: event?.id };
}

function senderLabel(from: { name: string | null; email: string }): string {
  return from.name ? `${from.name} <${from.email}>` : from.email;
}

/**
 * An email's sender-controlled texts as Postgres stores them and a model reads them: no NUL or other
 * control characters (one space instead), no lone surrogates (U+FFFD instead; jsonb refuses them),
 * one line, capped. Applying it twice changes nothing.
 */
export function storableEmail(email: EmailMetadata): EmailMetadata {
  return {
    ...email,
    from: {
      name: storableText(email.from.name ?? "", MAX_MAIL_TEXT) || null,
      email: storableText(email.from.email, MAX_ADDRESS) || "unknown@unknown",
    },
    subject: storableText(email.subject, MAX_MAIL_TEXT) || "(no subject)",
    snippet: storableText(email.snippet, MAX_SNIPPET),
  };
}

/** The sender's `person` entity name: the display name, else the address; short enough to index. */
export function senderEntityName(from: { name: string | null; email: string }): string {
  const name = storableText(from.name ?? from.email, MAX_MAIL_TEXT);
  let length = name.length;
  let fitted = name;
  while (!nameKeyFits(fitted)) {
    length = Math.floor(length * 0.75);
    fitted = `${cut(name, length)}…`;
  }
  return fitted;
}

function storableText(value: string, max: number): string {
  const clean = value.replace(LONE_SURROGATE, "\ufffd").replace(CONTROL, " ").replace(/\s+/g, " ").trim();
  return clean.length <= max ? clean : `${cut(clean, max - 1)}…`;
}
