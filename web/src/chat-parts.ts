// What a chat message shows besides its text: the channel it came through, how a person's message came
// (a voice note, a photo, a forward: agents/telegram-input.ts marks it), and chips for the memory work
// its turn did ("remembered Dune · book", "recalled 3"), each pointing at the memory it touched.
import type { UIMessage } from "ai";
import { memoryPath } from "./router";

/** What the agent stores on a message (agents/transcript.ts). `at` once transcript.ts stamps it. */
export interface MessageMetadata {
  source?: { kind?: string };
  at?: string;
  imported?: { id?: string; exportedAt?: string };
  /** The text is the transcript of a voice note. */
  voice?: boolean;
  /** A photo came with it (its bytes are replaced by PHOTO_PLACEHOLDER once answered). */
  photo?: boolean;
  /** The model could not see the photo: only the words were read. */
  captionOnly?: boolean;
  /** Someone else wrote it; the text starts "Forwarded from <name>:\n". */
  forwardedFrom?: string;
}

/** The text a photo leaves in the conversation once answered (withoutImages in agents/telegram-input.ts). */
const PHOTO_PLACEHOLDER = "[photo] ";
/** The words of a photo sent without a caption. */
const NO_CAPTION = "(a photo)";

/** A label above a person's words saying how they came. `icon` is decoration; `text` says it in words. */
export interface Mark {
  kind: "voice" | "photo" | "forward";
  icon: string;
  text: string;
  /** More about it, for a tooltip. */
  detail?: string;
}

/** The labels of a person's message, in the order they show. */
export function marksOf(message: UIMessage): Mark[] {
  const metadata = (message.metadata ?? {}) as MessageMetadata;
  const marks: Mark[] = [];
  if (metadata.forwardedFrom) marks.push({ kind: "forward", icon: "↪", text: `Forwarded from ${metadata.forwardedFrom}` });
  if (metadata.voice) marks.push({ kind: "voice", icon: "🎤", text: "Voice note", detail: "The words are what Soma heard." });
  // A message this browser has just sent has no metadata yet, but its image.
  if (metadata.photo || message.parts.some((p) => p.type === "file"))
    marks.push(
      metadata.captionOnly
        ? { kind: "photo", icon: "📷", text: "Photo not seen · only the words were read", detail: "The model can't see photos." }
        : { kind: "photo", icon: "📷", text: "Photo" },
    );
  return marks;
}

/**
 * A text part's words as the body shows them: without what a label already says (a forward's
 * "Forwarded from Bob:" line, a photo's placeholder, the stand-in words of a photo with no caption).
 * Empty when nothing is left to show.
 */
export function bodyTextOf(message: UIMessage, text: string): string {
  const metadata = (message.metadata ?? {}) as MessageMetadata;
  if (message.role !== "user") return text;
  if (metadata.photo && text === PHOTO_PLACEHOLDER) return "";
  let body = text;
  const prefix = metadata.forwardedFrom ? `Forwarded from ${metadata.forwardedFrom}:\n` : null;
  if (prefix && body.startsWith(prefix)) body = body.slice(prefix.length);
  if (metadata.photo && body === NO_CAPTION) return "";
  return body;
}

export interface Activity {
  label: string;
  /** Where the chip leads: a memory's page, or the memories page searching for what was recalled. */
  to: string | null;
}

interface ToolPart {
  type: string;
  state?: string;
  input?: { type?: string; name?: string; query?: string; entityId?: string; fromId?: string };
  output?: unknown;
}

function field(output: unknown, key: string): unknown {
  return output && typeof output === "object" ? (output as Record<string, unknown>)[key] : undefined;
}

/** The chip for one tool part of an assistant message, or null (not a memory tool, not done, refused). */
export function activityOf(part: { type: string }): Activity | null {
  const tool = part as ToolPart;
  if (tool.state !== "output-available" || field(tool.output, "error") !== undefined) return null;
  const { input, output } = tool;
  switch (tool.type) {
    case "tool-memory_capture": {
      const id = field(output, "entityId");
      return { label: `remembered ${input?.name} · ${input?.type}`, to: typeof id === "string" ? memoryPath(id) : null };
    }
    case "tool-memory_recall": {
      const found = Array.isArray(output) ? (output as Array<{ entity?: { id?: string } }>) : [];
      const only = found.length === 1 ? found[0]?.entity?.id : undefined;
      const search = input?.query ? `/app/memories?q=${encodeURIComponent(input.query)}` : "/app/memories";
      return { label: `recalled ${found.length}`, to: only ? memoryPath(only) : found.length > 0 ? search : null };
    }
    case "tool-memory_update":
      return field(output, "updated") ? { label: "updated a memory", to: input?.entityId ? memoryPath(input.entityId) : null } : null;
    case "tool-memory_forget":
      return field(output, "archived") ? { label: "forgot a memory", to: input?.entityId ? memoryPath(input.entityId) : null } : null;
    case "tool-memory_relate":
      return { label: "linked two memories", to: input?.fromId ? memoryPath(input.fromId) : null };
    case "tool-schedule_create":
      return { label: "scheduled a reminder", to: null };
    default:
      return null;
  }
}

/**
 * The channel a message came through: a person's message says so itself; a reply goes out through the
 * channel of the message it answers. `unrecorded` answers for a person's message without metadata yet
 * (the one this browser just sent, before the agent's copy replaces it).
 */
export function channelKindOf(
  messages: readonly UIMessage[],
  index: number,
  unrecorded: (message: UIMessage) => string | null = () => null,
): string | null {
  for (let i = index; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role !== "user" && i !== index) continue;
    const metadata = message.metadata as MessageMetadata | undefined;
    if (metadata?.imported) return "import";
    if (metadata?.source?.kind) return metadata.source.kind;
    if (message.role === "user") return unrecorded(message);
  }
  return null;
}
