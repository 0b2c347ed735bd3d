// What the workflow functions work with. The Worker builds these per request from its bindings
// (worker/routes/workflows.ts); tests and `npm run mail:watch` build them in Node against the same
// Postgres. Every database access goes through Database.withUser / withSystem, like the agent's.
import { Middleware, NonRetriableError } from "inngest";
import type { LanguageModel } from "ai";
import type { Database } from "../../db/database";
import type { Config } from "../../platform/config";
import { classifyFailure } from "../../platform/faults";
import { describeError, logJson } from "../../platform/log";
import type { Embedder } from "../integrations/model/embeddings";
import type { TelegramSender } from "../integrations/telegram-sender";
import type { Tracer, WorkflowTrace } from "../../platform/telemetry/tracer";

export interface WorkflowDeps {
  config: Config;
  db: Database;
  embedder: Embedder;
  /** The model fact extraction asks (the configured chat model). */
  model: LanguageModel;
  tracer: Tracer;
  /** Null when no bot token is configured: deliveries then fail for good, not in a retry loop. */
  telegram: TelegramSender | null;
  now: () => Date;
}

/** The sender, or a NonRetriableError: without a bot there is nobody to deliver to. */
export function telegramOf(deps: WorkflowDeps): TelegramSender {
  if (!deps.telegram) throw new NonRetriableError("TELEGRAM_BOT_TOKEN is not set");
  return deps.telegram;
}

/** Splits `items` into runs of `size` (one step each, so a fan-out stays within Inngest's step limits). */
export function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** How long a fan-out waits for Postgres to answer before it takes a failure for an outage. */
const OUTAGE_PING_MS = 2_000;

/**
 * One person's share of a fan-out (a night's merges, a weekly review, a watch renewal), isolated: a
 * failure is logged with the person's id and the error's own words (never a query's parameters, which
 * may be theirs), and returned as `{ ok: false }` so that the caller goes on with the next person. Only
 * an outage is thrown — a transient failure while Postgres does not answer a ping — so that Inngest
 * retries the step; the work of each function is idempotent per person, so a retry sends or merges
 * nothing twice. A person's own data (a statement timeout included) can never fail the run.
 */
export async function forOnePerson<T>(
  deps: Pick<WorkflowDeps, "db">,
  workflow: string,
  userId: string,
  work: () => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false }> {
  try {
    return { ok: true, value: await work() };
  } catch (error) {
    if (await isOutage(deps, error)) throw error;
    logJson("error", { workflow, userId, personSkipped: true, error: describeError(ownWords(error)) });
    return { ok: false };
  }
}

/** Whether a failure is an outage rather than one person's: transient, and Postgres does not answer a ping. */
export async function isOutage(deps: Pick<WorkflowDeps, "db">, error: unknown): Promise<boolean> {
  return classifyFailure(error) === "transient" && !(await deps.db.ping(OUTAGE_PING_MS));
}

/** The error without a failed query's text: drizzle's message repeats the parameters, its cause is the database's own. */
export function ownWords(error: unknown): unknown {
  return error instanceof Error && error.message.startsWith("Failed query") && error.cause instanceof Error ? error.cause : error;
}

/**
 * Traces every run in Langfuse, tagged `workflow` and the function id: one trace per run (the run id
 * is the trace id, so the several requests of one run add to the same trace), a span per step that
 * ran, the output or the error at the end. The batch is flushed before each request answers.
 */
export function tracingMiddleware(tracer: Tracer): Middleware.Class {
  return class TracingMiddleware extends Middleware.BaseMiddleware {
    readonly id = "soma-langfuse";
    #trace: WorkflowTrace | undefined;

    #traceOf(ctx: { runId: string; event: { id?: string; data?: unknown } }, fn: { id(prefix?: string): string }): WorkflowTrace {
      const data = (ctx.event.data ?? {}) as { userId?: unknown };
      this.#trace ??= tracer.startWorkflow({
        functionId: functionIdOf(fn),
        runId: ctx.runId,
        eventId: ctx.event.id,
        userId: typeof data.userId === "string" ? data.userId : undefined,
        input: withoutWords(ctx.event.data),
      });
      return this.#trace;
    }

    override onStepComplete(arg: Middleware.OnStepCompleteArgs) {
      this.#traceOf(arg.ctx, arg.fn).step(arg.stepInfo.options.name ?? arg.stepInfo.options.id, arg.output);
    }

    override onRunComplete(arg: Middleware.OnRunCompleteArgs) {
      this.#traceOf(arg.ctx, arg.fn).end({ output: arg.output, failed: false });
    }

    override onRunError(arg: Middleware.OnRunErrorArgs) {
      this.#traceOf(arg.ctx, arg.fn).end({ output: { error: `${arg.error.name}: ${arg.error.message}` }, failed: true });
    }

    override async wrapRequest({ next }: Middleware.WrapRequestArgs): Promise<Middleware.Response> {
      try {
        return await next();
      } finally {
        await tracer.flush().catch(() => {});
      }
    }
  };
}

/** An event's data as a trace keeps it: without the words an event queued before they moved to Postgres carries. */
function withoutWords(data: unknown): unknown {
  if (!data || typeof data !== "object" || !("text" in data)) return data;
  const { text: _words, ...rest } = data as Record<string, unknown>;
  return rest;
}

/** "fact-extract" from a function whose full id is "soma-fact-extract". */
function functionIdOf(fn: { id(prefix?: string): string }): string {
  return fn.id().replace(/^soma-/, "");
}
