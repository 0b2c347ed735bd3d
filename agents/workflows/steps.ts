// The step tools the delivery functions use (reminder-deliver, and the occurrences of a brief or review
// the person moved), as an interface: Inngest's own when Inngest runs them (inngestSteps), or the
// person's agent's in dev mode without a dev server (agents/local-runs.ts), which keeps each step's
// outcome in its own SQLite so that a restart resumes a run as Inngest would.
import type { briefRequested, importRequested, reminderCreated, reviewRequested } from "./events";

/** An event a delivery hands over: the next occurrence of what it delivered. */
export type HandedOver =
  | ReturnType<typeof reminderCreated.create>
  | ReturnType<typeof briefRequested.create>
  | ReturnType<typeof reviewRequested.create>
  | ReturnType<typeof importRequested.create>;

export interface Steps {
  /** Runs `work` once (its outcome kept: run again, it is not repeated); outcomes are JSON values. */
  run<T>(id: string, work: () => Promise<T>): Promise<T>;
  sleepUntil(id: string, at: Date): Promise<unknown>;
  sendEvent(id: string, event: HandedOver): Promise<unknown>;
}

/** Inngest's step tools as Steps (what a step returns is JSON already: ids, outcomes, counts). */
export function inngestSteps(step: {
  run: (id: string, work: () => Promise<unknown>) => Promise<unknown>;
  sleepUntil: (id: string, at: Date) => Promise<unknown>;
  sendEvent: (id: string, event: HandedOver) => Promise<unknown>;
}): Steps {
  return {
    run: <T>(id: string, work: () => Promise<T>) => step.run(id, work) as Promise<T>,
    sleepUntil: (id, at) => step.sleepUntil(id, at),
    sendEvent: (id, event) => step.sendEvent(id, event),
  };
}
