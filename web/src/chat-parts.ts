// What a chat message shows besides its text: the channel it came through, and chips for the memory
// work its turn did ("remembered Dune · book", "recalled 3"), each pointing at the memory it touched.
import type { UIMessage } from "ai";
import { memoryPath } from "./router";

/** What the agent stores on a message (agents/transcript.ts). `at` once transcript.ts stamps it. */
export interface MessageMetadata {
  source?: { kind?: string };
  at?: string;
  imported?: { id?: string; exportedAt?: string };
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
