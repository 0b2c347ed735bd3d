// The conversation in an export file (docs/export.md): how the agent's stored messages are written
// out, and which of a file's messages an import may add.
//
// An imported message must never pass for something this agent's model did or saw: only the words of
// the person's and the assistant's messages come in (no tool calls or results, no reasoning, no files,
// no system messages), each marked `metadata.imported`, under an id of its own (`import:<exported id>`:
// an exported `telegram:<update id>` must never meet the inbox's id of a new update from another bot).
// A message whose id the conversation already has is skipped, so importing a file twice adds nothing.
// The file's messages arrive already stripped to that (db/export-format.ts, ImportedConversation): no
// metadata and no part but its type and a text part's words is ever sent into the agent. A message
// dated after the import is stored as of the import: no date of a file can lie in the future.
import type { UIMessage } from "ai";
import type { Sessions } from "agents/sessions";
import type { ExportMessage as Message, ImportMessage } from "../db/export-format";

type Session = ReturnType<Sessions["session"]>;

const IMPORTED_PREFIX = "import:";

/**
 * Appends the importable messages of an export's conversation after the session's newest one, each once
 * however often the file is imported; the messages it added.
 */
export async function appendImported(
  session: Session,
  file: readonly ImportMessage[],
  exportedAt: string,
  limit: number,
): Promise<UIMessage[]> {
  const present = new Set((await session.getHistory()).map((m) => m.id));
  const incoming = importableMessages(file, present, exportedAt, limit);
  let parentId = (await session.getLatestLeaf())?.id ?? null;
  for (const { message, createdAt } of incoming) {
    await session.importMessage(message, { parentId, createdAt });
    parentId = message.id;
  }
  return incoming.map((m) => m.message);
}

/**
 * The whole stored conversation (every message, not only the loaded window), oldest first. `times`
 * reads each message's stored time (the history itself leaves it out); called once the history is read.
 */
export async function storedConversation(session: Session, times: () => ReadonlyMap<string, number>): Promise<Message[]> {
  const history = await session.getHistory();
  const storedAt = history.length > 0 ? times() : new Map<string, number>();
  return history.map((m) => {
    const at = storedAt.get(m.id) ?? m.createdAt?.getTime();
    return {
      id: m.id,
      role: m.role as Message["role"],
      parts: m.parts as Message["parts"],
      ...(m.metadata !== undefined ? { metadata: m.metadata } : {}),
      createdAt: at !== undefined && Number.isFinite(at) ? new Date(at).toISOString() : null,
    };
  });
}

/** The file's messages this conversation does not have yet, as they are to be stored (see the file comment). */
export function importableMessages(
  file: readonly ImportMessage[],
  present: ReadonlySet<string>,
  exportedAt: string,
  limit: number,
  now = Date.now(),
): Array<{ message: UIMessage; createdAt: number }> {
  const fallback = Date.parse(exportedAt);
  const incoming: Array<{ message: UIMessage; createdAt: number }> = [];
  for (const exported of file) {
    if (exported.role !== "user" && exported.role !== "assistant") continue;
    const id = exported.id.startsWith(IMPORTED_PREFIX) ? exported.id : `${IMPORTED_PREFIX}${exported.id}`;
    if (present.has(id) || present.has(exported.id)) continue;
    const text = exported.parts
      .map((part) => (part.type === "text" && typeof part.text === "string" ? part.text : ""))
      .join("")
      .trim();
    if (!text) continue;
    incoming.push({
      message: { id, role: exported.role, parts: [{ type: "text", text }], metadata: { imported: { id: exported.id, exportedAt } } },
      createdAt: Math.min(exported.createdAt ? Date.parse(exported.createdAt) : fallback, now),
    });
  }
  return incoming.slice(-limit);
}
