// Reading imported conversations (ChatGPT, Claude, pasted saved memories) into memory: the function body
// memory-consolidate runs on memory/import.requested, and the person's agent runs itself in dev mode
// without a workflow engine (agents/local-runs.ts). Its state is the import's rows
// (db/repositories/conversation-imports.ts): a few conversations a step, oldest first, each marked read
// in the step that read it, so a restart or a retry goes on where it was and reads nothing twice, and a
// cancel (the person's) stops it before its next step.
//
// Only the person's own messages are read, each on its own: the other assistant's words never reach
// the extraction, so its suggestion ("You might like Piranesi") can never become the person's book.
// Each message goes through the same extraction as a chat message — the memory_capture tool with the
// model in use, then fact extraction — dated when it was said (told_at, and "last year" counted from
// that day), with the message as its source ("From ChatGPT, «Trip ideas», 3 May 2024"). A message that
// nothing came of leaves nothing behind; one the model refuses for good is skipped, while an outage
// fails the step, to be tried again with nothing of it marked read. The model calls a person's imports may make in a day are capped
// (the operator's bill): past IMPORT_MODEL_CALLS_PER_DAY (4,000 by default) an import stops, saying so, and can be started
// again the next day.
import { generateText, stepCountIs } from "ai";
import {
  conversationRead,
  importCallsToday,
  importProgress,
  pendingConversations,
  setImportState,
  type ImportProgress,
  type PendingConversation,
} from "../db/repositories/conversation-imports";
import { deliverNotice } from "./integrations/notices";
import { recordSource } from "../db/repositories/memory";
import { profileOf } from "../db/repositories/people";
import { counted, type ImportedMessage } from "../platform/conversation-imports";
import { zoneOrUtc } from "../platform/local-time";
import { classifyFailure } from "../platform/faults";
import { describeError, logJson } from "../platform/log";
import { type ExtractedFact, extractFacts } from "./fact-extraction";
import { recordClaims } from "./fact-recording";
import { memoryTools } from "./turn/tools/memory-tools";
import type { WorkflowDeps } from "./workflows/deps";
import type { Steps } from "./workflows/steps";

/** Conversations read in one step. */
const CONVERSATIONS_PER_STEP = 10;
/** Messages the model is asked about at once (two calls each). */
const MODEL_CALLS_AT_ONCE = 8;
/** Steps one run takes at most: past it the run ends and the rest is read by the next request. */
const MAX_STEPS = 1_000;

const ORIGIN_NAMES: Record<string, string> = { chatgpt: "ChatGPT", claude: "Claude", pasted: "pasted saved memories" };

function instructions(origin: string, title: string, at: string): string {
  return [
    origin === "pasted"
      ? `Below is one of the person's saved memories, which they brought from another assistant on ${at.slice(0, 10)}.`
      : `Below is one message the person wrote to ${ORIGIN_NAMES[origin] ?? origin} (conversation «${title}»), on ${at.slice(0, 10)}.`,
    "Save what it tells about the person's own life with memory_capture: a book they read, a film they saw, a place they",
    "went, a person they know, a project of theirs. Dates are relative to the day it was written. Questions, requests, and",
    "anything that is not about the person's own life are not saved. If nothing is worth saving, call no tool.",
  ].join("\n");
}

interface Counted {
  memories: number;
  facts: number;
  calls: number;
}

/** A message of the person's in a conversation being read. */
interface Said {
  pending: PendingConversation;
  index: number;
  message: ImportedMessage;
}

function sourceOfSaid({ pending: { conversation }, index, message }: Said) {
  return {
    kind: conversation.origin,
    externalId: `${conversation.id}#${index}`,
    payload: { text: message.text, title: conversation.title, conversation: conversation.id, at: message.at },
  };
}

/**
 * The model's part of one message, both calls at once: its memories (the capture tool, which stores
 * them as it goes: an upsert, safe side by side) and its facts (only extracted here: facts are recorded
 * in the order they were said, below, as a later one may replace an earlier one).
 */
async function askModel(
  deps: WorkflowDeps,
  userId: string,
  zone: string,
  said: Said,
): Promise<{ memories: number; claims: ExtractedFact[] }> {
  const { conversation } = said.pending;
  const source = sourceOfSaid(said);
  await deps.db.withUser(userId, (tx) => recordSource(tx, userId, source));
  let memories = 0;
  const { memory_capture } = memoryTools({
    db: deps.db,
    userId,
    embedder: deps.embedder,
    source,
    toldAt: new Date(said.message.at),
    timezone: zone,
    onActivity: (activity) => {
      if (activity.kind === "captured" && activity.created) memories += 1;
    },
  });
  const [, claims] = await Promise.all([
    generateText({
      model: deps.model,
      system: instructions(conversation.origin, conversation.title, said.message.at),
      messages: [{ role: "user", content: said.message.text }],
      tools: { memory_capture: memory_capture! },
      stopWhen: stepCountIs(2),
    }),
    extractFacts(deps.model, said.message.text, said.message.at.slice(0, 10)),
  ]);
  return { memories, claims };
}

/**
 * Runs `work` on every item, at most `limit` at a time; the outcomes in the items' order. The first
 * failure rejects, and no item is started after it.
 */
async function pooled<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const outcomes: R[] = new Array(items.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (next < items.length && !failed) {
      const i = next++;
      try {
        outcomes[i] = await work(items[i]!);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return outcomes;
}

/**
 * Reads the person's messages of `conversations`: the model is asked for MODEL_CALLS_AT_ONCE messages at
 * a time (an import's time is the model's latency), then the facts are recorded in the order the messages
 * were said. A message that fails is logged and skipped. The counts per conversation.
 */
async function readConversations(
  deps: WorkflowDeps,
  userId: string,
  zone: string,
  conversations: PendingConversation[],
): Promise<Counted[]> {
  const said: Said[] = conversations.flatMap((pending) =>
    pending.conversation.messages.flatMap((message, index) => (message.role === "user" ? [{ pending, index, message }] : [])),
  );
  // An outage (the model or Postgres not answering) fails the step, for it to be tried again with
  // nothing of it marked read; only a message the model refuses for good is skipped, and logged.
  const asked = await pooled(said, MODEL_CALLS_AT_ONCE, (one) =>
    askModel(deps, userId, zone, one).catch((error: unknown) => {
      if (classifyFailure(error) === "transient") throw error;
      logJson("warn", {
        agent: userId,
        import: "a message could not be read",
        conversation: one.pending.sourceId,
        error: describeError(error),
      });
      return null;
    }),
  );
  const counts = new Map(conversations.map((c) => [c.sourceId, { memories: 0, facts: 0, calls: 0 }]));
  const order = said.map((one, i) => ({ one, answer: asked[i] })).sort((a, b) => a.one.message.at.localeCompare(b.one.message.at));
  for (const { one, answer } of order) {
    const count = counts.get(one.pending.sourceId)!;
    count.calls += 2;
    if (!answer) continue;
    const source = sourceOfSaid(one);
    const message = { userId, source, text: one.message.text, toldAt: new Date(one.message.at) };
    const facts = await recordClaims(deps, message, answer.claims, zone);
    count.memories += answer.memories;
    count.facts += facts.filter((f) => f.outcome === "created").length;
  }
  return conversations.map((c) => counts.get(c.sourceId)!);
}

/** One step: the next few conversations, unless the import is over, cancelled or out of budget. */
async function readNextConversations(deps: WorkflowDeps, userId: string, importId: string): Promise<{ finished: boolean; read: number }> {
  const start = await deps.db.withUser(userId, async (tx) => {
    const progress = await importProgress(tx, importId);
    const person = await profileOf(tx);
    if (!progress || !person || progress.state !== "running") return null;
    // One export must not run up the operator's model bill: past the day's calls it pauses.
    if ((await importCallsToday(tx)) >= deps.config.IMPORT_MODEL_CALLS_PER_DAY) {
      await setImportState(tx, importId, "stopped");
      return null;
    }
    return { zone: zoneOrUtc(person.timezone), pending: await pendingConversations(tx, importId, CONVERSATIONS_PER_STEP) };
  });
  if (!start) return { finished: true, read: 0 };
  if (start.pending.length === 0) {
    await deps.db.withUser(userId, (tx) => setImportState(tx, importId, "done"));
    return { finished: true, read: 0 };
  }
  const counts = await readConversations(deps, userId, start.zone, start.pending);
  for (const [i, pending] of start.pending.entries()) {
    // Cancelled meanwhile: the conversation's row is gone, and nothing more is counted.
    await deps.db.withUser(userId, (tx) => conversationRead(tx, importId, pending, counts[i]!));
  }
  return { finished: false, read: start.pending.length };
}

/** "Imported 412 conversations from ChatGPT: 35 memories and 12 facts added." — what the person is told when it ends. */
function importOutcome(progress: ImportProgress): string {
  const what =
    progress.origin === "pasted"
      ? "your pasted saved memories"
      : `${counted(progress.received, "conversation", "conversations")} from ${ORIGIN_NAMES[progress.origin] ?? progress.origin}`;
  const added = `${counted(progress.memories, "memory", "memories")} and ${counted(progress.facts, "fact", "facts")}`;
  if (progress.state === "stopped")
    return `Your import of ${what} paused after ${progress.done}, with ${added} so far: imports made the most model calls I make for them in a day. Start it again tomorrow in Settings and it goes on where it stopped.`;
  return `Imported ${what}: ${added} added. Ask me about them, or see them with /memories.`;
}

/** The whole import, a step at a time; when it ends (done, or paused by the budget), the person is told. */
export async function runImport(deps: WorkflowDeps, data: { userId: string; importId: string }, steps: Steps) {
  let read = 0;
  for (let i = 0; i < MAX_STEPS; i++) {
    const step = await steps.run(`read-${i}`, () => readNextConversations(deps, data.userId, data.importId));
    read += step.read;
    if (step.finished) break;
  }
  const told = await steps.run("tell", async () => {
    const progress = await deps.db.withUser(data.userId, (tx) => importProgress(tx, data.importId));
    if (!progress || (progress.state !== "done" && progress.state !== "stopped") || read === 0) return false;
    const took = await deliverNotice(deps, data.userId, "reply", {
      text: importOutcome(progress),
      title: "Import finished",
      url: "/app/memories",
      options: { ttlSeconds: 86_400, urgency: "normal", topic: `import-${data.importId.slice(0, 8)}` },
    });
    return took.telegram || took.push;
  });
  return { read, ...(told ? { told } : {}) };
}
