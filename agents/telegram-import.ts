// Imports from other assistants sent to the bot (issue 30): ChatGPT's data export (.zip) or a
// conversations.json of ChatGPT's or Claude's sent as a document (within the 20 MB a bot may download),
// a .txt of saved memories, or `/import` followed by saved memories pasted into the message. The file is
// read here, in the person's agent, then goes the web app's way (db/repositories/conversation-imports.ts):
// the conversations kept and the person shown what it holds (conversations, from when to when, their
// messages, the model calls); `/import go` starts it in the background, `/import cancel` drops it,
// `/import` says how far it is; when it ends the person is told what it added (agents/conversation-import.ts).
// Pasted saved memories start at once (what they hold is what the person just wrote). A larger export
// goes through Settings on the web.
import { strFromU8, unzipSync } from "fflate";
import type { Database } from "../db/database";
import {
  cancelImport,
  createImport,
  type ImportProgress,
  listImports,
  receiveConversations,
  setImportState,
} from "../db/repositories/conversation-imports";
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
  return keepImport(deps, conversations);
}

const HOW =
  "Send me your ChatGPT data export (.zip) or a ChatGPT or Claude conversations.json as a file (up to 20 MB), or /import followed by your saved memories, one a line. Larger exports go through Settings in the web app (/login).";

/**
 * `/import …`: `go` starts the import the person was shown, `cancel` drops it (or stops one under way),
 * nothing else after it is saved memories pasted (one a line), and `/import` alone says how an import
 * stands ("Importing 412 conversations… 35 %") or how to begin one.
 */
export async function importCommand(deps: TelegramImportDeps, argument: string): Promise<string> {
  const word = argument.trim().toLowerCase();
  const latest = (await deps.db.withUser(deps.userId, (tx) => listImports(tx, 1)))[0];
  const open = latest && (latest.state === "receiving" || latest.state === "running" || latest.state === "stopped") ? latest : null;
  if (word === "go") {
    if (!open || open.state === "running") return open ? progressLine(open) : `Nothing is waiting to be imported. ${HOW}`;
    return startKept(deps, open);
  }
  if (word === "cancel") {
    if (!open) return "No import is under way.";
    await deps.db.withUser(deps.userId, (tx) => cancelImport(tx, open.id));
    return "Cancelled: what was not read yet is dropped; what was read stays in your memory.";
  }
  if (!word) return open ? progressLine(open) : HOW;
  try {
    return await keepImport(deps, [readPasted(argument)]);
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

/** "Importing 412 conversations from ChatGPT… 35 % (12 memories and 3 facts so far)." */
function progressLine(job: ImportProgress): string {
  const what =
    job.origin === "pasted"
      ? "your saved memories"
      : `${counted(job.received, "conversation", "conversations")} from ${ORIGIN[job.origin as keyof typeof ORIGIN] ?? job.origin}`;
  const share = `${job.received > 0 ? Math.floor((job.done / job.received) * 100) : 0} %`;
  const so = `${counted(job.memories, "memory", "memories")} and ${counted(job.facts, "fact", "facts")} so far`;
  if (job.state === "receiving")
    return `${what} ${job.received === 1 ? "is" : "are"} waiting: send /import go to start, or /import cancel.`;
  if (job.state === "stopped")
    return `Importing ${what} paused at ${share} (${so}): imports made the most model calls I make for them in a day. Send /import go tomorrow to go on.`;
  return `Importing ${what}… ${share} (${so}).`;
}

/** Keeps the conversations as an import waiting to be started, and shows the person what it holds. */
async function keepImport(deps: TelegramImportDeps, conversations: ImportedConversation[]): Promise<string> {
  const summary = summarize(conversations);
  if (summary.userMessages === 0) return "There is nothing of yours to import in it: no message you wrote.";
  const origin = conversations[0]!.origin;
  const { userId } = deps;
  const made = await deps.db.withUser(userId, async (tx) => {
    const busy = (await listImports(tx, 20)).find((i) => i.state === "receiving" || i.state === "running");
    if (busy) return null;
    const created = await createImport(tx, userId, { origin, conversations: summary.conversations, from: summary.from, to: summary.to });
    for (let i = 0; i < conversations.length; i += 100) await receiveConversations(tx, userId, created.id, conversations.slice(i, i + 100));
    return created;
  });
  if (!made) return "Another import is under way: send /import to see how it stands, or /import cancel.";
  if (origin === "pasted") return startKept(deps, { ...made, received: summary.conversations, userMessages: summary.userMessages });
  const when = summary.from && summary.to ? `, from ${day(summary.from)} to ${day(summary.to)}` : "";
  return `This holds ${counted(summary.conversations, "conversation", "conversations")} from ${ORIGIN[origin]}${when}, with ${counted(summary.userMessages, "message", "messages")} of yours: I read only those, about ${counted(summary.userMessages * 2, "model call", "model calls")}. Send /import go to start, or /import cancel.`;
}

/** Starts an import that waits; the reply says it began. */
async function startKept(deps: TelegramImportDeps, job: ImportProgress): Promise<string> {
  const { userId } = deps;
  await deps.db.withUser(userId, (tx) => setImportState(tx, job.id, "running"));
  if (!(await deps.start(job.id))) {
    await deps.db.withUser(userId, (tx) => setImportState(tx, job.id, job.state === "stopped" ? "stopped" : "receiving"));
    return "I couldn't start the import just now. Send /import go again in a minute.";
  }
  if (job.origin === "pasted")
    return `Importing ${counted(job.userMessages, "saved memory", "saved memories")}. I'll tell you when it's done.`;
  return `Importing ${counted(job.received, "conversation", "conversations")} from ${ORIGIN[job.origin as keyof typeof ORIGIN] ?? job.origin}. I'll tell you when it's done; /import shows how far it is.`;
}
