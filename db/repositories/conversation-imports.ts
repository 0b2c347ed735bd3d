// Imports of conversations from other assistants (ChatGPT, Claude, pasted saved memories), kept in the
// tables there are (no table of their own):
//   the import     an `events` row of kind 'import': what arrived (conversations, from when to when, the
//                  person's messages), its progress (done, memories, facts, model calls) and its state —
//                  receiving (batches arriving) → running → done | cancelled | stopped (the budget ran out)
//   a conversation a `sources` row of kind chatgpt | claude | pasted under the conversation's own id,
//                  holding its words while it waits (payload.import.state 'pending'); once read, only its
//                  title, start and size stay (payload.import.state 'done'). The same conversation sent
//                  twice is one row, and never read twice.
//   a message      what a memory or fact came from: a `sources` row under `<conversation id>#<n>` with
//                  the person's words, the conversation's title and when it was said (deleted when
//                  nothing came of it, as a chat message's is)
// Every function takes a Database.withUser transaction: row-level security keeps it to one person.
import { and, desc, eq, sql } from "drizzle-orm";
import type { ImportedConversation } from "../../platform/conversation-imports";
import { sqlRows, type Tx } from "../database";
import { events, sources } from "../schema";

export type ImportState = "receiving" | "running" | "done" | "cancelled" | "stopped";

export interface ImportProgress {
  id: string;
  origin: string;
  state: ImportState;
  /** Conversations the person chose to import, and those that arrived. */
  conversations: number;
  received: number;
  done: number;
  from: string | null;
  to: string | null;
  /** The person's messages in what arrived: one model call each (two, with the facts). */
  userMessages: number;
  memories: number;
  facts: number;
  calls: number;
  createdAt: string;
}

/** What an import's `events` row keeps in its payload: its progress, without what the row itself holds. */
type ImportPayload = Omit<ImportProgress, "id" | "state" | "createdAt">;

function progressOf(row: { id: string; status: string; payload: unknown; createdAt: Date }): ImportProgress {
  const p = row.payload as ImportPayload;
  return { id: row.id, state: row.status as ImportState, ...p, createdAt: row.createdAt.toISOString() };
}

/** Starts an import of `conversations` conversations from `origin`, receiving until startImport. */
export async function createImport(
  tx: Tx,
  userId: string,
  plan: { origin: string; conversations: number; from: string | null; to: string | null },
) {
  const payload: ImportPayload = { ...plan, received: 0, done: 0, userMessages: 0, memories: 0, facts: 0, calls: 0 };
  const [row] = await tx
    .insert(events)
    .values({ userId, kind: "import", occurredAt: new Date(), payload: { ...payload }, status: "receiving" })
    .returning({ id: events.id, status: events.status, payload: events.payload, createdAt: events.createdAt });
  if (!row) throw new Error("createImport inserted no row");
  return progressOf(row);
}

export async function importProgress(tx: Tx, importId: string): Promise<ImportProgress | null> {
  const [row] = await tx
    .select({ id: events.id, status: events.status, payload: events.payload, createdAt: events.createdAt })
    .from(events)
    .where(and(eq(events.id, importId), eq(events.kind, "import")));
  return row ? progressOf(row) : null;
}

/** The person's imports, newest first. */
export async function listImports(tx: Tx, limit = 10): Promise<ImportProgress[]> {
  const rows = await tx
    .select({ id: events.id, status: events.status, payload: events.payload, createdAt: events.createdAt })
    .from(events)
    .where(eq(events.kind, "import"))
    .orderBy(desc(events.createdAt))
    .limit(limit);
  return rows.map(progressOf);
}

/** Keeps a batch of conversations for the import; ones already there (sent twice, or imported before) are skipped. */
export async function receiveConversations(tx: Tx, userId: string, importId: string, batch: ImportedConversation[]): Promise<number> {
  let added = 0;
  let userMessages = 0;
  for (const c of batch) {
    const rows = await tx
      .insert(sources)
      .values({
        userId,
        kind: c.origin,
        externalId: c.id,
        payload: { title: c.title, startedAt: c.startedAt, messages: c.messages, import: { id: importId, state: "pending" } },
      })
      .onConflictDoNothing()
      .returning({ id: sources.id });
    if (rows.length === 0) continue;
    added += 1;
    userMessages += c.messages.filter((m) => m.role === "user").length;
  }
  await tx.execute(sql`
    update events set payload = payload
      || jsonb_build_object('received', (payload->>'received')::int + ${added}::int, 'userMessages', (payload->>'userMessages')::int + ${userMessages}::int)
    where id = ${importId}`);
  return added;
}

/** The model calls the person's imports made in the last 24 hours (an import's calls count on the day it began). */
export async function importCallsToday(tx: Tx): Promise<number> {
  const [row] = await sqlRows<{ calls: number }>(
    tx,
    sql`select coalesce(sum((payload->>'calls')::int), 0)::int as calls from events where kind = 'import' and created_at > now() - interval '1 day'`,
  );
  return row?.calls ?? 0;
}

export async function setImportState(tx: Tx, importId: string, state: ImportState): Promise<void> {
  await tx
    .update(events)
    .set({ status: state })
    .where(and(eq(events.id, importId), eq(events.kind, "import")));
}

/** Ends the import: its conversations still waiting are dropped (their words are not kept). */
export async function cancelImport(tx: Tx, importId: string): Promise<ImportProgress | null> {
  const progress = await importProgress(tx, importId);
  if (!progress || progress.state === "done" || progress.state === "cancelled") return progress;
  await tx.execute(sql`delete from sources where payload->'import'->>'id' = ${importId} and payload->'import'->>'state' = 'pending'`);
  await setImportState(tx, importId, "cancelled");
  return importProgress(tx, importId);
}

export interface PendingConversation {
  sourceId: string;
  conversation: ImportedConversation;
}

/** The import's next conversations to read, oldest first (a later one then corrects an earlier one's facts). */
export async function pendingConversations(tx: Tx, importId: string, limit: number): Promise<PendingConversation[]> {
  const rows = await sqlRows<{ id: string; kind: string; external_id: string; payload: Record<string, unknown> }>(
    tx,
    sql`select id, kind, external_id, payload from sources
        where payload->'import'->>'id' = ${importId} and payload->'import'->>'state' = 'pending'
        order by payload->>'startedAt', id limit ${limit}`,
  );
  return rows.map((r) => ({
    sourceId: r.id,
    conversation: {
      origin: r.kind as ImportedConversation["origin"],
      id: r.external_id,
      title: String(r.payload.title ?? ""),
      startedAt: String(r.payload.startedAt ?? ""),
      messages: (r.payload.messages ?? []) as ImportedConversation["messages"],
    },
  }));
}

/** A conversation read: its words go (its title, start and size stay), and the import counts it. */
export async function conversationRead(
  tx: Tx,
  importId: string,
  pending: PendingConversation,
  counted: { memories: number; facts: number; calls: number },
): Promise<void> {
  const { conversation } = pending;
  const kept = await tx
    .update(sources)
    .set({
      payload: {
        title: conversation.title,
        startedAt: conversation.startedAt,
        messages: conversation.messages.length,
        import: { id: importId, state: "done" },
      },
    })
    .where(eq(sources.id, pending.sourceId))
    .returning({ id: sources.id });
  // Cancelled meanwhile: the conversation's row is gone, and nothing of it is counted.
  if (kept.length === 0) return;
  await tx.execute(sql`
    update events set payload = payload || jsonb_build_object(
      'done', (payload->>'done')::int + 1,
      'memories', (payload->>'memories')::int + ${counted.memories}::int,
      'facts', (payload->>'facts')::int + ${counted.facts}::int,
      'calls', (payload->>'calls')::int + ${counted.calls}::int)
    where id = ${importId}`);
}
