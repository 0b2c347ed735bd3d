// One model turn over the person's conversation: the model with the memory tools, bounded in steps
// and time, streamed as AI SDK UI message chunks to the chat protocol (and to an HTTP client of
// chat()). A failed turn apologises at once on the web; a Telegram turn's failure goes back to the
// inbox, which retries it or gives up on it. Traces, product events and the turn-completed event
// (fact extraction) are sent in the background.
import {
  convertToModelMessages,
  createUIMessageStream,
  isStepCount,
  streamText,
  type LanguageModel,
  type UIMessage,
  type UIMessageChunk,
} from "ai";
import type { Database } from "../../db/database";
import type { SourceRef } from "../../db/repositories/memory";
import { profileOf } from "../../db/repositories/people";
import type { Config } from "../../platform/config";
import { classifyFailure } from "../../platform/faults";
import { isTelegramMessageId } from "../inbox";
import { APOLOGY } from "../inbox-policy";
import { zoneOrUtc } from "../../platform/local-time";
import { describeError, logJson } from "../../platform/log";
import { loadProfile } from "./profile";
import type { Embedder } from "../integrations/model/embeddings";
import { systemPrompt } from "./system-prompt";
import { createTelemetry } from "../../platform/telemetry/sinks";
import type { Channel } from "../../platform/channel";
import type { Tracer } from "../../platform/telemetry/tracer";
import type { MemoryActivity } from "./tools/context";
import { turnTools } from "./tools/index";
import { fenceForwarded } from "./tools/untrusted-memory";
import { textOf, type MessageSource } from "../transcript";
import { handOver, type LocalEvent } from "../local-runs";
import { reminderCreated } from "../workflows/events";
import { routineEvent } from "../schedules/routines";
import { afterTurn, readAfterTurn, replyReady } from "./after-turn";

/** Whole-turn budget: model steps and tools together. */
export const TURN_BUDGET_MS = 20_000;
/** Tool-loop steps per turn. */
const MAX_STEPS = 5;
/** Messages the model sees; older ones stay stored but out of the prompt. */
const MODEL_WINDOW = 40;

const SSE = new TextEncoder();

/** Errors of a tool call the model got wrong: reported to the model, never a failed turn. */
const MODEL_MISTAKES = new Set(["AI_InvalidToolInputError", "AI_NoSuchToolError", "AI_ToolCallRepairError"]);

export interface Turn {
  userId: string;
  config: Config;
  /** The conversation, the newest user message last. */
  messages: readonly UIMessage[];
  model: LanguageModel;
  embedder: Embedder;
  db: Database;
  tracer: Tracer;
  budgetMs: number;
  abortSignal: AbortSignal | undefined;
  /** The HTTP client of chat() waiting for this turn's chunks, by the message's external id. */
  listener(externalId: string): WritableStreamDefaultWriter<Uint8Array> | undefined;
  /** What else follows this turn's chunks as they come (a Telegram reply's draft), by the message's external id. */
  observer(externalId: string): { push(chunk: UIMessageChunk): void } | undefined;
  /** A Telegram turn failed: the inbox decides (retry, or give up). */
  failed(messageId: string, failure: unknown): void;
  /** Whether the person has the web app open (a socket to their agent). */
  present(): boolean;
  waitUntil(work: Promise<unknown>): void;
  /** Runs a delivery no workflow engine took in the agent at its time (dev mode: agents/local-runs.ts). */
  runHere?(event: LocalEvent): Promise<void>;
}

/** One turn over the conversation: the model with the memory tools, bounded in steps and time. */
export function turnStream(turn: Turn) {
  const { config, userId, messages } = turn;
  const last = [...messages].reverse().find((m) => m.role === "user");
  const source: SourceRef = (last?.metadata as MessageSource | undefined)?.source ?? {
    kind: "web",
    externalId: last?.id ?? crypto.randomUUID(),
    payload: { text: last ? textOf(last) : "" },
  };
  // A tool that finds a dependency down ends the turn at once: it is retried whole later.
  const outage = new AbortController();
  const signal = AbortSignal.any([AbortSignal.timeout(turn.budgetMs), outage.signal, ...(turn.abortSignal ? [turn.abortSignal] : [])]);
  // A Telegram turn that fails is the inbox's to retry or give up on; a web turn apologises at once.
  const inboxTurn = last ? isTelegramMessageId(last.id) : false;
  const window = messages.slice(-MODEL_WINDOW);

  const channel: Channel = source.kind === "telegram" ? "telegram" : "web";
  const { tracer } = turn;
  const started = Date.now();
  const telemetry = createTelemetry(config);
  // Telegram messages are counted at the webhook (commands included); web ones arrive here.
  if (channel === "web") telemetry.capture({ event: "message_received", userId: userId, properties: { channel } });
  let toolCalls = 0;
  const onActivity = (activity: MemoryActivity) => {
    if (activity.kind === "captured")
      telemetry.capture({ event: "memory_captured", userId: userId, properties: { type: activity.type, created: activity.created } });
    if (activity.kind === "recalled")
      telemetry.capture({ event: "memory_recalled", userId: userId, properties: { results: activity.results, typed: activity.typed } });
  };
  const trace = tracer.startTurn({ userId: userId, channel, input: last ? textOf(last) : "", messageId: source.externalId });

  const listener = turn.listener(source.externalId);
  const observer = turn.observer(source.externalId);

  return createUIMessageStream({
    execute: async ({ writer }) => {
      // Every chunk goes to the chat protocol (and so to storage and WebSocket clients) and, for a
      // turn started by chat(), to its HTTP client as server-sent events.
      const emit = (chunk: UIMessageChunk) => {
        writer.write(chunk);
        void listener?.write(SSE.encode(`data: ${JSON.stringify(chunk)}\n\n`)).catch(() => {});
        observer?.push(chunk);
      };
      // The reply's time, kept with the message (the chat shows it).
      emit({ type: "message-metadata", messageMetadata: { at: new Date().toISOString() } satisfies MessageSource });
      let failure: unknown;
      let output = "";
      try {
        // The person's name and clock, read once per turn. A failed read fails the turn like any
        // outage (retried by the inbox): guessing UTC could set a reminder at the wrong hour.
        // What the previous turn told (its facts, extracted in this agent in dev mode) is read first.
        await readAfterTurn(userId);
        const person = await turn.db.withUser(userId, profileOf);
        const timezone = zoneOrUtc(person?.timezone);
        // Their standing facts (agents/turn/profile.ts); a failed read fails the turn the same way.
        const profile = await loadProfile(turn.db, userId, timezone);
        const result = streamText({
          model: turn.model,
          system: systemPrompt({ name: person?.displayName ?? "", now: new Date(), timezone, profile }),
          messages: await convertToModelMessages(fenceForwarded(window), { ignoreIncompleteToolCalls: true }),
          tools: turnTools({
            db: turn.db,
            userId: userId,
            embedder: turn.embedder,
            source,
            timezone,
            onActivity,
            scheduleReminder: ({ eventId, at }) =>
              handOver(
                config,
                reminderCreated.create({ userId, eventId, at }, { id: `reminder-${eventId}` }),
                { agent: userId },
                turn.runHere,
              ),
            scheduleRoutine: (name, occurrence) => handOver(config, routineEvent(name, occurrence), { agent: userId }, turn.runHere),
          }),
          stopWhen: isStepCount(MAX_STEPS),
          abortSignal: signal,
          maxRetries: 1,
          onStepFinish: (step) => {
            toolCalls += step.toolResults.length;
            for (const call of step.toolResults) trace.tool(call.toolName, call.input, call.output);
            for (const part of step.content) {
              if (part.type === "tool-error" && classifyFailure(part.error) === "transient") {
                failure ??= part.error;
                outage.abort(part.error);
              }
            }
          },
        });
        const onError = (error: unknown) => {
          // A malformed tool call is the model's mistake, answered to the model as a tool error; it
          // does not fail the turn.
          if (!MODEL_MISTAKES.has((error as Error | undefined)?.name ?? "")) failure ??= error;
          return describeError(error);
        };
        for await (const chunk of result.toUIMessageStream({ onError })) {
          if (chunk.type === "error") {
            logJson("error", { agent: userId, turn: "model", error: chunk.errorText });
            continue;
          }
          if (chunk.type === "text-delta") output += chunk.delta;
          if (chunk.type !== "finish") emit(chunk);
        }
      } catch (error) {
        failure ??= error;
        logJson("error", { agent: userId, turn: "model", error: describeError(error) });
      }
      if (signal.aborted) failure ??= signal.reason ?? new DOMException("the turn ran out of time", "TimeoutError");
      const failed = failure !== undefined;
      if (failed && inboxTurn && last) {
        turn.failed(last.id, failure);
      } else if (failed) {
        const id = `apology-${crypto.randomUUID()}`;
        emit({ type: "text-start", id });
        emit({ type: "text-delta", id, delta: APOLOGY });
        emit({ type: "text-end", id });
        output = APOLOGY;
      }
      emit({ type: "finish" });
      trace.end({ output, failed });
      telemetry.log({ kind: "turn", userId: userId, channel, durationMs: Date.now() - started, failed, tools: toolCalls });
      turn.waitUntil(telemetry.flush());
      // Background work on what the person said (fact-extract); never holds up or fails the turn.
      const input = last ? textOf(last) : "";
      if (input && !(failed && inboxTurn)) turn.waitUntil(afterTurn(turn, channel, source, input));
      // A web reply that finished after the person left reaches them as a push (agents/turn/after-turn.ts).
      if (channel === "web" && !failed && output && !turn.present() && !listener) turn.waitUntil(replyReady(turn, output));
      turn.waitUntil(tracer.flush().catch((error: unknown) => logJson("warn", { telemetry: "langfuse", error: describeError(error) })));
    },
  });
}
