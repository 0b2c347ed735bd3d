// Deliveries without a workflow engine: in dev mode with no Inngest dev server to take an event (a
// newcomer's `npm start`), a reminder, or an occurrence of a brief or review the person moved, is
// delivered by the person's own agent at its time instead of being dropped. The agent schedules the
// run (an Agents SDK schedule: a Durable Object alarm, kept across restarts) and runs the very function
// body Inngest would run (reminder-deliver's deliverReminder, brief-generate's sendBrief,
// weekly-review's reviewOccurrence) on steps of its own: each step's outcome is kept in the agent's
// SQLite until the run ends, so a run cut short by a restart resumes where it was, as Inngest resumes
// one, and nothing it did is done again. A run that fails is tried again a minute later, five times at
// most; what it hands over (the next occurrence) is scheduled the same way. Production never runs this
// (handOver below falls back to it only in dev mode without Inngest Cloud).
import type { Database } from "../db/database";
import type { Config } from "../platform/config";
import { devWithoutCloud, emitEvents } from "./workflows/client";
import { describeError, logJson } from "../platform/log";
import { deliverReminder } from "./workflows/functions/reminder-deliver";
import { sendBrief } from "./workflows/functions/brief-generate";
import { reviewOccurrence } from "./workflows/functions/weekly-review";
import type { WorkflowDeps } from "./workflows/deps";
import { workflowDepsFromEnv } from "./workflows/env";
import { briefRequested, importRequested, reminderCreated, reviewRequested } from "./workflows/events";
import { runImport } from "./conversation-import";
import type { HandedOver, Steps } from "./workflows/steps";
import type { ObjectSql } from "./object-sql";

/** A handed-over event as an agent schedule keeps it (JSON: no methods). */
export interface LocalEvent {
  name: string;
  id: string;
  data: Record<string, unknown>;
}

/** What of the agent a local run uses: its SQLite and its schedules. */
export interface LocalHost {
  sql: ObjectSql;
  schedule(when: Date, callback: "localRun", payload: LocalEvent): Promise<unknown>;
  listSchedules(): Promise<Array<{ callback?: string; payload?: unknown }>>;
}

/** Attempts of one run, a minute apart. */
const ATTEMPTS = 5;
const RETRY_AFTER_MS = 60_000;
/** The longest a run waits for its time itself (an agent schedule fires within the second). */
const MAX_WAIT_MS = 5_000;

/** The run woke before its time: planned again for then. */
class NotYet extends Error {
  constructor(readonly at: Date) {
    super(`not yet: ${at.toISOString()}`);
  }
}

export function localEvent(event: HandedOver | LocalEvent): LocalEvent {
  return { name: event.name, id: String(event.id), data: event.data as Record<string, unknown> };
}

/** When the event's delivery is due (an import: now). */
function dueAt(event: LocalEvent): Date {
  return event.data.at === undefined ? new Date() : new Date(String(event.data.at));
}

/**
 * Hands an event to Inngest; in dev mode without Inngest Cloud, when no dev server takes it, to `runHere`
 * (the person's agent) instead. False when neither took it.
 */
export async function handOver(
  config: Config,
  event: HandedOver,
  context: Record<string, unknown>,
  runHere: ((event: LocalEvent) => Promise<void>) | undefined,
): Promise<boolean> {
  if (await emitEvents(config, event, context)) return true;
  if (!runHere || !devWithoutCloud(config)) return false;
  try {
    await runHere(localEvent(event));
    return true;
  } catch (error) {
    logJson("warn", { ...context, localRun: "could not be planned", event: String(event.id), error: describeError(error) });
    return false;
  }
}

/** Runs `event`'s delivery in this agent at its time; planned twice, it is one run. */
export async function planLocalRun(host: LocalHost, event: LocalEvent, at = dueAt(event)): Promise<void> {
  const planned = await host.listSchedules();
  if (planned.some((s) => s.callback === "localRun" && (s.payload as LocalEvent | undefined)?.id === event.id)) return;
  await host.schedule(at, "localRun", localEvent(event));
}

/** One local run (an agent schedule's callback): resumed from its kept steps, retried when it fails. */
export async function runLocally(host: LocalHost, env: Env, db: Database, event: LocalEvent): Promise<void> {
  // One run of an event at a time (its schedule and a retry never overlap it): the kept steps are its own.
  if (running.has(event.id)) return;
  running.add(event.id);
  try {
    await attemptRun(host, env, db, event);
  } finally {
    running.delete(event.id);
  }
}

/** Runs in progress in this isolate, by event id. */
const running = new Set<string>();

async function attemptRun(host: LocalHost, env: Env, db: Database, event: LocalEvent): Promise<void> {
  const store = new StepStore(host.sql.bind(host) as ObjectSql, event.id);
  const attempt = store.attempt();
  try {
    // As under Inngest, a step that fails ends this attempt (its run is tried again later, the steps that
    // succeeded kept): the function sees a step's failure only on the last attempt.
    const steps = store.steps((next) => planLocalRun(host, localEvent(next)), attempt >= ATTEMPTS);
    const outcome = await Promise.race([runDelivery(workflowDepsFromEnv(env, db), event, steps), store.failed]);
    store.clear();
    logJson("info", {
      agent: String(event.data.userId),
      localRun: event.name,
      event: event.id,
      outcome: outcome as Record<string, unknown>,
    });
  } catch (error) {
    if (error instanceof NotYet) return void (await host.schedule(error.at, "localRun", event));
    const failed = { agent: String(event.data.userId), localRun: event.name, event: event.id, attempt, error: describeError(error) };
    if (attempt >= ATTEMPTS) {
      store.clear();
      logJson("error", { ...failed, gaveUp: true });
      return;
    }
    logJson("warn", failed);
    await host.schedule(new Date(Date.now() + RETRY_AFTER_MS), "localRun", event);
  }
}

/** The function body Inngest would run for the event. */
function runDelivery(deps: WorkflowDeps, event: LocalEvent, steps: Steps): Promise<unknown> {
  switch (event.name) {
    case reminderCreated.name:
      return deliverReminder(deps, reminderCreated.schema.parse(event.data), steps);
    case briefRequested.name:
      return sendBrief(deps, briefRequested.schema.parse(event.data), steps);
    case reviewRequested.name:
      return reviewOccurrence(deps, reviewRequested.schema.parse(event.data), steps);
    case importRequested.name:
      return runImport(deps, importRequested.schema.parse(event.data), steps);
    default:
      throw new Error(`no local run for ${event.name}`);
  }
}

/** A run's kept steps, in the agent's SQLite (table local_steps). */
class StepStore {
  readonly #sql: ObjectSql;
  readonly #run: string;
  /** Rejects with the first step that fails (while steps are not final). */
  readonly failed: Promise<never>;
  #fail: (error: unknown) => void = () => {};

  constructor(sql: ObjectSql, run: string) {
    this.#sql = sql;
    this.#run = run;
    this.failed = new Promise<never>((_, reject) => (this.#fail = reject));
    sql`create table if not exists local_steps (run text not null, step text not null, output text not null, primary key (run, step))`;
  }

  /** This attempt's number (1 for the first), counted as a kept step. */
  attempt(): number {
    const [row] = this.#sql<{ output: string }>`select output from local_steps where run = ${this.#run} and step = '#attempts'`;
    const attempt = (row ? Number(row.output) : 0) + 1;
    this.#keep("#attempts", attempt);
    return attempt;
  }

  clear(): void {
    this.#sql`delete from local_steps where run = ${this.#run}`;
  }

  /** The run's steps; a failing step ends the attempt (`failed`), unless `final`: then the function sees it. */
  steps(handOver: (event: HandedOver) => Promise<void>, final: boolean): Steps {
    const once = async <T>(step: string, work: () => Promise<T>): Promise<T> => {
      const [kept] = this.#sql<{ output: string }>`select output from local_steps where run = ${this.#run} and step = ${step}`;
      if (kept) return JSON.parse(kept.output) as T;
      let output: T;
      try {
        output = await work();
      } catch (error) {
        if (final) throw error;
        this.#fail(error);
        // The function never goes past a failed step in this attempt (an abandoned promise, as Inngest leaves it).
        return new Promise<T>(() => {});
      }
      this.#keep(step, output ?? null);
      return output;
    };
    return {
      run: once,
      // The run is scheduled at its time, which an agent schedule keeps in whole seconds: what is left
      // of a second is waited out here; a time further ahead (never planned so) is planned again.
      sleepUntil: async (_step, at) => {
        const left = at.getTime() - Date.now();
        if (left > MAX_WAIT_MS) throw new NotYet(at);
        if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
        return null;
      },
      sendEvent: (step, event) =>
        once(step, async () => {
          await handOver(event);
          return { ids: [event.id] };
        }),
    };
  }

  #keep(step: string, output: unknown): void {
    this.#sql`insert into local_steps (run, step, output) values (${this.#run}, ${step}, ${JSON.stringify(output)})
      on conflict (run, step) do update set output = excluded.output`;
  }
}
