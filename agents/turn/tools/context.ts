// What every tool of a turn is bound to — the person, their database, the message the turn answers —
// and what the tools report back. Shared by the memory tools (memory-tools.ts) and the fact tools
// (fact-tools.ts); index.ts puts them together as the turn's tool set.
import type { ModelMessage } from "ai";
import type { Database } from "../../../db/database";
import type { SourceRef } from "../../../db/repositories/memory";
import type { RoutineName, RoutineOccurrence } from "../../schedules/routines";
import type { Embedder } from "../../integrations/model/embeddings";
import { refusalFor, showsThirdPartyText, type GuardedTool } from "./untrusted-memory";

export interface ToolContext {
  db: Database;
  userId: string;
  embedder: Embedder;
  /** The message this turn answers: provenance for everything it writes. */
  source: SourceRef;
  /** When that message was said, when not now (a conversation imported from another assistant). */
  toldAt?: Date;
  /** Told about every write, for the UI's memory activity and for traces. */
  onActivity?: (activity: MemoryActivity) => void;
  /** The person's IANA timezone: a reminder time without an offset is read in it (default UTC). */
  timezone?: string;
  /** Hands a stored reminder to the workflow that delivers it; false when that could not be done. */
  scheduleReminder?: (reminder: { eventId: string; at: string }) => Promise<boolean>;
  /** Hands the next occurrence of a brief or review the person moved to its workflow; false when that could not be done. */
  scheduleRoutine?: (name: RoutineName, occurrence: RoutineOccurrence) => Promise<boolean>;
}

export type MemoryActivity =
  | { kind: "captured"; entityId: string; type: string; name: string; created: boolean }
  | { kind: "recalled"; results: number; typed: boolean }
  | { kind: "forgotten"; entityId: string }
  | { kind: "updated"; entityId: string }
  | { kind: "related"; edgeId: string }
  | { kind: "scheduled"; eventId: string; at: string };

/**
 * The refusal when this call would act on an email's say-so (see untrusted-memory.ts), else null.
 * `targets` gives the names of what the call acts on; it is asked only when email text is in view.
 */
export async function thirdPartyRefusal(
  tool: GuardedTool,
  messages: ModelMessage[],
  targets: () => string[] | Promise<string[]>,
): Promise<string | null> {
  if (!showsThirdPartyText(messages)) return null;
  return refusalFor(tool, await targets(), messages);
}
