// Deadlines for outside calls. Every dependency Soma waits on (Postgres, the Bot API, Inngest,
// embeddings) is bounded, so a hung peer costs a bounded wait and then a recognisable, transient
// DeadlineError instead of holding a person's inbox (or a Durable Object) indefinitely.
// It lives in db/ because imports point one way (worker/ → agents/ → db/) and both layers use it.

/** An outside call did not finish within its deadline: transient, worth retrying later. */
export class DeadlineError extends Error {
  constructor(
    /** The dependency that did not answer in time: "postgres", "telegram", "inngest", "embeddings", … */
    readonly what: string,
    /** The deadline that expired, in milliseconds. */
    readonly ms: number,
  ) {
    super(`${what} did not answer within ${ms} ms`);
    this.name = "DeadlineError";
  }
}

/**
 * Settles like `work`, or rejects with DeadlineError(`what`) once `ms` have passed. Given a function,
 * calls it with an AbortSignal that aborts (with that DeadlineError as its reason) at the deadline, so
 * the work itself can stop (a fetch, a retry loop). The timer is cleared as soon as the work settles;
 * a rejection of the work after the deadline is handled here, never left unhandled.
 */
export function withDeadline<T>(work: Promise<T> | ((signal: AbortSignal) => Promise<T>), ms: number, what: string): Promise<T> {
  const controller = new AbortController();
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      const error = new DeadlineError(what, ms);
      controller.abort(error);
      reject(error);
    }, ms);
    let promise: Promise<T>;
    try {
      promise = typeof work === "function" ? work(controller.signal) : work;
    } catch (error) {
      promise = Promise.reject(error);
    }
    Promise.resolve(promise).then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
