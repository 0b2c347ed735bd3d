// Conversations from other assistants, read into one shape: a ChatGPT data export, a Claude export,
// and the saved-memories list either one shows (pasted). Pure functions with no I/O, shared by the web
// app — which reads an export of hundreds of MB in the browser and sends Soma only these conversations,
// in batches — and the server, which checks what arrives with the same bounds (ImportedConversation).
//
// ChatGPT (`conversations.json`, alone or inside the export's .zip): an array of conversations, each a
// tree of nodes (`mapping`: id → {message, parent, children}); what was said is the path from the root
// to `current_node` — a regenerated answer or an edited question leaves branches that were not what
// was said in the end. Hidden messages (`metadata.is_visually_hidden_from_conversation`), system and tool
// messages, the assistant's calls to tools (`recipient` other than "all") and its reasoning, code and
// execution output (`content_type` other than text and multimodal_text) are left out; of a multimodal
// message only the text parts are kept. Times are Unix seconds (`create_time`).
// Claude (`conversations.json`): an array of conversations with `chat_messages`, each with `sender`
// ("human" or "assistant"), `text`, and in newer exports `content` parts (text, thinking, tool_use,
// tool_result: only text is kept). Times are ISO 8601.
// Described from the formats' public descriptions and importers' parsers in public repositories.

import { cut, LONE_SURROGATE } from "./clean-text";

type ImportOrigin = "chatgpt" | "claude" | "pasted";

export interface ImportedMessage {
  role: "user" | "assistant";
  text: string;
  /** When it was said (ISO 8601); the conversation's start when the message has no time. */
  at: string;
}

export interface ImportedConversation {
  origin: ImportOrigin;
  /** The conversation's id in the other assistant (ChatGPT's conversation id, Claude's uuid). */
  id: string;
  title: string;
  startedAt: string;
  messages: ImportedMessage[];
}

/** What one conversation may hold: far above a real one, and small enough to send and store. */
export const IMPORT_BOUNDS = { title: 300, text: 20_000, messages: 2_000, id: 200 } as const;

export class ImportFormatError extends Error {
  override name = "ImportFormatError";
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);
const str = (value: unknown) => (typeof value === "string" ? value : "");

/** Seconds since the epoch (ChatGPT) or an ISO string (Claude) as ISO 8601; null when it is neither. */
function isoTime(value: unknown): string | null {
  const date =
    typeof value === "number" && Number.isFinite(value) ? new Date(value * 1000) : typeof value === "string" ? new Date(value) : null;
  return date && !Number.isNaN(date.getTime()) ? date.toISOString() : null;
}

function clean(text: string, limit: number): string {
  // NUL and half surrogate pairs cannot be stored; the rest of the words can.
  return cut(text.replaceAll("\u0000", "").replace(LONE_SURROGATE, "").trim(), limit);
}

function conversation(
  origin: ImportOrigin,
  id: string,
  title: string,
  startedAt: string,
  messages: ImportedMessage[],
): ImportedConversation {
  return {
    origin,
    id: id.slice(0, IMPORT_BOUNDS.id),
    title: clean(title, IMPORT_BOUNDS.title) || "Untitled",
    startedAt,
    messages: messages.slice(0, IMPORT_BOUNDS.messages),
  };
}

/** The messages on ChatGPT's current branch: from `current_node` up to the root, then in order. */
function currentBranch(mapping: Json, currentNode: string): Json[] {
  const path: Json[] = [];
  const seen = new Set<string>();
  let id: string | null = currentNode in mapping ? currentNode : null;
  while (id !== null && !seen.has(id)) {
    seen.add(id);
    const node = mapping[id];
    if (!isObject(node)) break;
    if (isObject(node.message)) path.push(node.message);
    id = typeof node.parent === "string" ? node.parent : null;
  }
  return path.reverse();
}

/** The leaf a conversation without `current_node` ended on: the newest message's node. */
function newestLeaf(mapping: Json): string {
  let best = "";
  let bestTime = Number.NEGATIVE_INFINITY;
  for (const [id, node] of Object.entries(mapping)) {
    if (!isObject(node) || (Array.isArray(node.children) && node.children.length > 0)) continue;
    const time = isObject(node.message) && typeof node.message.create_time === "number" ? node.message.create_time : 0;
    if (time >= bestTime) [best, bestTime] = [id, time];
  }
  return best;
}

function chatGptMessage(message: Json, fallbackAt: string): ImportedMessage | null {
  const role = isObject(message.author) ? message.author.role : undefined;
  if (role !== "user" && role !== "assistant") return null;
  const metadata = isObject(message.metadata) ? message.metadata : {};
  if (metadata.is_visually_hidden_from_conversation === true) return null;
  if (role === "assistant" && message.recipient !== undefined && message.recipient !== "all") return null;
  const content = isObject(message.content) ? message.content : {};
  if (content.content_type !== "text" && content.content_type !== "multimodal_text") return null;
  const parts = Array.isArray(content.parts) ? content.parts : [];
  const text = clean(parts.filter((part): part is string => typeof part === "string").join("\n"), IMPORT_BOUNDS.text);
  if (!text) return null;
  return { role, text, at: isoTime(message.create_time) ?? fallbackAt };
}

/** A ChatGPT export's conversations (the parsed `conversations.json`). */
export function readChatGpt(value: unknown): ImportedConversation[] {
  if (!Array.isArray(value)) throw new ImportFormatError("A ChatGPT export's conversations.json is a list of conversations.");
  return value.filter(isObject).map((c, index) => {
    const mapping = isObject(c.mapping) ? c.mapping : {};
    const startedAt = isoTime(c.create_time) ?? new Date(0).toISOString();
    const leaf = typeof c.current_node === "string" && c.current_node in mapping ? c.current_node : newestLeaf(mapping);
    const messages = currentBranch(mapping, leaf)
      .map((m) => chatGptMessage(m, startedAt))
      .filter((m): m is ImportedMessage => m !== null);
    return conversation("chatgpt", str(c.conversation_id) || str(c.id) || `conversation-${index}`, str(c.title), startedAt, messages);
  });
}

function claudeText(message: Json): string {
  if (Array.isArray(message.content) && message.content.some(isObject)) {
    const texts = message.content.filter(isObject).filter((part) => part.type === "text" && typeof part.text === "string");
    if (texts.length > 0) return texts.map((part) => part.text as string).join("\n");
  }
  return str(message.text);
}

/** A Claude export's conversations (the parsed `conversations.json`). */
export function readClaude(value: unknown): ImportedConversation[] {
  if (!Array.isArray(value)) throw new ImportFormatError("A Claude export's conversations.json is a list of conversations.");
  return value.filter(isObject).map((c, index) => {
    const startedAt = isoTime(c.created_at) ?? new Date(0).toISOString();
    const messages = (Array.isArray(c.chat_messages) ? c.chat_messages : [])
      .filter(isObject)
      .map((m): ImportedMessage | null => {
        const role = m.sender === "human" ? "user" : m.sender === "assistant" ? "assistant" : null;
        const text = clean(claudeText(m), IMPORT_BOUNDS.text);
        return role && text ? { role, text, at: isoTime(m.created_at) ?? startedAt } : null;
      })
      .filter((m): m is ImportedMessage => m !== null);
    return conversation("claude", str(c.uuid) || `conversation-${index}`, str(c.name), startedAt, messages);
  });
}

/** Which assistant a parsed `conversations.json` came from, by its shape; null for neither. */
export function detectExport(value: unknown): "chatgpt" | "claude" | null {
  if (!Array.isArray(value)) return null;
  const first = value.find(isObject);
  if (!first) return null;
  if ("mapping" in first) return "chatgpt";
  if ("chat_messages" in first) return "claude";
  return null;
}

/** A file's JSON, or an error that says what is wrong: cut short (a download that did not finish), or not JSON. */
export function parseExportJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    const message = (error as Error).message;
    if (/end of (JSON )?input|Unterminated|Expected .* after/i.test(message) && text.trim().length > 0 && !/[\]}]\s*$/.test(text))
      throw new ImportFormatError("The file is cut short: it ends in the middle of the conversations. Download the export again.");
    throw new ImportFormatError(`The file is not JSON (${message}).`);
  }
}

/** A parsed `conversations.json`: ChatGPT's or Claude's conversations, or an error for JSON of another shape. */
export function readExportValue(value: unknown): { origin: "chatgpt" | "claude"; conversations: ImportedConversation[] } {
  if (Array.isArray(value) && value.length === 0) return { origin: "chatgpt", conversations: [] };
  const origin = detectExport(value);
  if (!origin)
    throw new ImportFormatError(
      "This is neither a Soma export nor a ChatGPT or Claude conversations.json: neither ChatGPT's `mapping` nor Claude's `chat_messages` is in it.",
    );
  return { origin, conversations: origin === "chatgpt" ? readChatGpt(value) : readClaude(value) };
}

/** A `conversations.json` as text (parseExportJson, then readExportValue). */
export function readExportText(text: string): { origin: "chatgpt" | "claude"; conversations: ImportedConversation[] } {
  return readExportValue(parseExportJson(text));
}

/** Headings the saved-memories screens show above the list, which are not memories themselves. */
const PASTED_HEADINGS = /^(saved memories|memories|memory|manage memories|what (chatgpt|claude) remembers( about you)?)\s*:?\s*$/i;

/**
 * Memories pasted from ChatGPT's saved memories or Claude's memory: one statement a line (bullets and
 * numbering removed, headings and blank lines skipped), as one conversation of the person's own words.
 */
export function readPasted(text: string, now = new Date()): ImportedConversation {
  const lines = text
    .split(/\r?\n/)
    .map((line) => clean(line.replace(/^\s*(?:[-*•·▪◦]|\d+[.)])\s+/, ""), IMPORT_BOUNDS.text))
    .filter((line) => line.length > 0 && !PASTED_HEADINGS.test(line));
  if (lines.length === 0) throw new ImportFormatError("There is nothing to import in what was pasted: paste one memory a line.");
  const at = now.toISOString();
  const id = `pasted-${at}`;
  return conversation(
    "pasted",
    id,
    "Pasted memories",
    at,
    lines.map((line) => ({ role: "user", text: line, at })),
  );
}

/** How many conversations, from when to when, and how many messages of the person's (each one model call). */
export function summarize(conversations: ImportedConversation[]): {
  conversations: number;
  from: string | null;
  to: string | null;
  userMessages: number;
} {
  const times = conversations.flatMap((c) => c.messages.map((m) => m.at)).sort();
  return {
    conversations: conversations.length,
    from: times[0] ?? null,
    to: times.at(-1) ?? null,
    userMessages: conversations.reduce((n, c) => n + c.messages.filter((m) => m.role === "user").length, 0),
  };
}

/** "1 conversation", "412 conversations" (thousands grouped). */
export function counted(n: number, one: string, many: string): string {
  return `${n.toLocaleString("en-GB")} ${n === 1 ? one : many}`;
}
