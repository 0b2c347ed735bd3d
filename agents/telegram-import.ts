// Imports from other assistants sent to the bot (issue 30): ChatGPT's data export (.zip) or a
// conversations.json of ChatGPT's or Claude's sent as a document (within the 20 MB a bot may download),
// a .txt of saved memories, or `/import` followed by saved memories pasted into the message. The file is
// read here, in the person's agent, then goes the web app's way (db/repositories/conversation-imports.ts):
// the conversations kept, the import started in the background, the person told what it holds and, when
// it ends, what it added (agents/conversation-import.ts). A larger export goes through Settings on the web.
import { strFromU8, unzipSync } from "fflate";
import type { Database } from "../db/database";
import { createImport, listImports, receiveConversations, setImportState } from "../db/repositories/conversation-imports";
import {
  counted,
  type ImportedConversation,
  ImportFormatError,
  parseExportJson,
  readExportText,
  readExportValue,
  readPasted,
  summarize,
} from "../platform/conversation-imports";
import type { Config } from "../platform/config";
import { TELEGRAM_DOWNLOAD_LIMIT } from "./integrations/telegram-sender";
import { handOver, type LocalEvent } from "./local-runs";
import { importRequested } from "./workflows/events";

/** What of the person's agent an import sent to the bot uses (agents/user-agent.ts). */
interface ImportHost {
  db: Database;
  userId: string;
  config: Config;
  download(fileId: string, maxBytes: number, signal: AbortSignal): Promise<Uint8Array>;
  runHere(event: LocalEvent): Promise<void>;
}

/** The agent's import deps: the import is handed to memory-consolidate, or in dev mode without Inngest to the agent itself. */
export function importDepsOf(host: ImportHost): TelegramImportDeps {
  const { db, userId, config, download } = host;
  const start = (importId: string) =>
    handOver(config, importRequested.create({ userId, importId }, { id: `import-${importId}` }), { agent: userId }, (event) =>
      host.runHere(event),
    );
  return { db, userId, download, start };
}

export interface TelegramImportDeps {
  db: Database;
  userId: string;
  download(fileId: string, maxBytes: number, signal: AbortSignal): Promise<Uint8Array>;
  /** Hands the import to the background; false when nothing took it. */
  start(importId: string): Promise<boolean>;
}

const ORIGIN = { chatgpt: "ChatGPT", claude: "Claude" } as const;
const day = (iso: string) =>
  new Date(iso).toLocaleDateString("en-GB", { day: "numeric", month: "short", year: "numeric", timeZone: "UTC" });

/** Reads a document sent to the bot as conversations, or says why it cannot. */
export async function importDocument(
  deps: TelegramImportDeps,
  file: { fileId: string; fileName: string; bytes?: number },
  signal: AbortSignal,
): Promise<string> {
  if ((file.bytes ?? 0) > TELEGRAM_DOWNLOAD_LIMIT)
    return "That file is larger than the 20 MB a bot may download. Import it in Settings in the web app (/login): any size works there.";
  const bytes = await deps.download(file.fileId, TELEGRAM_DOWNLOAD_LIMIT, signal);
  let conversations: ImportedConversation[];
  try {
    conversations = readFile(file.fileName, bytes);
  } catch (error) {
    if (error instanceof ImportFormatError) return `I couldn't import ${file.fileName}: ${error.message}`;
    throw error;
  }
  return startImport(deps, conversations);
}

/** `/import` with saved memories pasted after it, one a line. */
export async function importPastedText(deps: TelegramImportDeps, text: string): Promise<string> {
  if (!text.trim())
    return "Send me your ChatGPT data export (.zip) or a ChatGPT or Claude conversations.json as a file (up to 20 MB), or /import followed by your saved memories, one a line. Larger exports go through Settings in the web app (/login).";
  try {
    return await startImport(deps, [readPasted(text)]);
  } catch (error) {
    if (error instanceof ImportFormatError) return error.message;
    throw error;
  }
}

function readFile(name: string, bytes: Uint8Array): ImportedConversation[] {
  if (/\.txt$/i.test(name)) return [readPasted(strFromU8(bytes))];
  if (/\.zip$/i.test(name) || (bytes[0] === 0x50 && bytes[1] === 0x4b)) {
    let entries: Record<string, Uint8Array>;
    try {
      entries = unzipSync(bytes, { filter: (f) => /(^|\/)conversations\.json$/.test(f.name) });
    } catch (error) {
      throw new ImportFormatError(`it is not a readable .zip (${(error as Error).message}).`);
    }
    const found = Object.values(entries)[0];
    if (!found) throw new ImportFormatError("this .zip holds no conversations.json (a ChatGPT data export has one).");
    return readExportText(strFromU8(found)).conversations;
  }
  const value = parseExportJson(strFromU8(bytes));
  if (value && typeof value === "object" && (value as { format?: unknown }).format === "soma-export")
    throw new ImportFormatError("it is a Soma export: import it in Settings in the web app (/login).");
  return readExportValue(value).conversations;
}

async function startImport(deps: TelegramImportDeps, conversations: ImportedConversation[]): Promise<string> {
  const summary = summarize(conversations);
  if (summary.userMessages === 0) return "There is nothing of yours to import in it: no message you wrote.";
  const origin = conversations[0]!.origin;
  const { userId } = deps;
  const made = await deps.db.withUser(userId, async (tx) => {
    const busy = (await listImports(tx, 20)).find((i) => i.state === "receiving" || i.state === "running");
    if (busy) return null;
    const created = await createImport(tx, userId, { origin, conversations: summary.conversations, from: summary.from, to: summary.to });
    for (let i = 0; i < conversations.length; i += 100) await receiveConversations(tx, userId, created.id, conversations.slice(i, i + 100));
    await setImportState(tx, created.id, "running");
    return created;
  });
  if (!made) return "Another import is under way: I'll tell you when it's done (or cancel it in Settings in the web app).";
  if (!(await deps.start(made.id))) {
    await deps.db.withUser(userId, (tx) => setImportState(tx, made.id, "receiving"));
    return "I couldn't start the import just now. Send the file again in a minute.";
  }
  if (origin === "pasted")
    return `Importing ${counted(summary.userMessages, "saved memory", "saved memories")}. I'll tell you when it's done.`;
  const when = summary.from && summary.to ? ` (${day(summary.from)} to ${day(summary.to)})` : "";
  return `Importing ${counted(summary.conversations, "conversation", "conversations")} from ${ORIGIN[origin]}${when}: I read only what you wrote, ${counted(summary.userMessages, "message", "messages")}. I'll tell you when it's done.`;
}
