// The inbox's table in the agent's SQLite (agents/inbox.ts keeps its rows): created on first use, and
// brought up to date on every start, so an agent made by an earlier release keeps its pending messages.
import type { WebAppButton } from "./integrations/telegram-sender";
import type { ObjectSql } from "./object-sql";

/**
 * What an item is answered with: text as it is (a command's answer, a notice), the model's Markdown
 * (sent formatted), a document (a command's file, e.g. /export) with its caption, or text with a button
 * that opens the Mini App. A document is stored by name, not by content: the host renders it when it is
 * sent (a whole export does not belong in an inbox row), and it is delivered exactly like text, once.
 */
export type Reply = string | { markdown: string } | { document: DocumentReply; caption: string } | { text: string; button: WebAppButton };
export interface DocumentReply {
  kind: "export";
}

/** The columns of soma_inbox a reply is kept in until it is delivered. */
export function replyColumns(reply: Reply): { text: string; document: string | null; format: string | null; button: string | null } {
  if (typeof reply === "string") return { text: reply, document: null, format: null, button: null };
  if ("markdown" in reply) return { text: reply.markdown, document: null, format: "markdown", button: null };
  if ("button" in reply) return { text: reply.text, document: null, format: null, button: JSON.stringify(reply.button) };
  return { text: reply.caption, document: JSON.stringify(reply.document), format: null, button: null };
}

export function createInboxTable(sql: ObjectSql): void {
  sql`create table if not exists soma_inbox (
    seq integer primary key autoincrement,
    id text not null unique,
    sort_key integer not null,
    kind text not null default 'message',
    first_contact integer not null default 0,
    chat_id integer not null,
    text text not null,
    source_ref text not null,
    state text not null default 'pending',
    reply text,
    received_at integer not null
  )`;
  // Columns added after the first release (existing agents keep their rows).
  const have = new Set(sql<{ name: string }>`select name from pragma_table_info('soma_inbox')`.map((c) => c.name));
  const column = (name: string, ddl: () => void) => {
    if (!have.has(name)) ddl();
  };
  column("attempts", () => sql`alter table soma_inbox add column attempts integer not null default 0`);
  column("failures", () => sql`alter table soma_inbox add column failures integer not null default 0`);
  column("interrupted", () => sql`alter table soma_inbox add column interrupted integer not null default 0`);
  column("in_attempt", () => sql`alter table soma_inbox add column in_attempt integer not null default 0`);
  column("first_failed_at", () => sql`alter table soma_inbox add column first_failed_at integer`);
  column("next_attempt_at", () => sql`alter table soma_inbox add column next_attempt_at integer not null default 0`);
  column("noticed", () => sql`alter table soma_inbox add column noticed integer not null default 0`);
  column("last_error", () => sql`alter table soma_inbox add column last_error text`);
  column("outcome", () => sql`alter table soma_inbox add column outcome text`);
  column("document", () => sql`alter table soma_inbox add column document text`);
  column("format", () => sql`alter table soma_inbox add column format text`);
  column("extras", () => sql`alter table soma_inbox add column extras text`);
  column("button", () => sql`alter table soma_inbox add column button text`);
  // A reply being sent when the agent stopped may have reached Telegram: never sent twice.
  sql`update soma_inbox set state = coalesce(outcome, 'done') where state = 'delivering'`;
}
