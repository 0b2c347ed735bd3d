// The Inngest client of the app "soma", configured from the validated Worker config (a Worker has no
// process.env for the SDK to read), and the one way the rest of Soma emits workflow events.
//
// Deadlines: every HTTP request this client makes gives up after SEND_DEADLINE_MS (an AbortSignal on
// its fetch), and emitEvents as a whole — the SDK retries a failed send up to five times — gives up
// after SEND_DEADLINE_MS too, aborting whatever attempt is in flight and every later one.
import { AsyncLocalStorage } from "node:async_hooks";
import { Inngest } from "inngest";
import { DeadlineError, withDeadline } from "../../platform/deadline";
import type { Config } from "../../platform/config";
import { describeError, logJson } from "../../platform/log";

const INNGEST_APP_ID = "soma";

export type InngestClient = Inngest<{ id: typeof INNGEST_APP_ID }>;

const clients = new WeakMap<Config, InngestClient>();

/**
 * Client options from the validated config (event key, signing key and its rotation fallback, API base
 * URL, dev mode). The signing keys are the client's in inngest v4 (serve() takes none): with them
 * explicit, serve() verifies with the keys of the validated config, not with what the SDK itself reads
 * from the request's env.
 */
export function clientOptions(config: Config) {
  const dev = config.INNGEST_DEV;
  return {
    id: INNGEST_APP_ID,
    ...(config.INNGEST_EVENT_KEY ? { eventKey: config.INNGEST_EVENT_KEY } : {}),
    ...(config.INNGEST_SIGNING_KEY ? { signingKey: config.INNGEST_SIGNING_KEY } : {}),
    // A key rotation: Inngest keeps signing with the old key until the new one is promoted.
    ...(config.INNGEST_SIGNING_KEY_FALLBACK ? { signingKeyFallback: config.INNGEST_SIGNING_KEY_FALLBACK } : {}),
    ...(config.INNGEST_BASE_URL ? { baseUrl: config.INNGEST_BASE_URL } : dev && /^https?:/.test(dev) ? { baseUrl: dev } : {}),
    // Always explicit: left unset, the SDK would read INNGEST_DEV from the env itself (production ignores it).
    isDev: Boolean(dev),
  } as const;
}

/** The longest emitEvents waits for Inngest, and the longest any one request of the sending client waits. */
export const SEND_DEADLINE_MS = 5_000;

/** The deadline signal of the emitEvents call in progress (the SDK's retries run inside it). */
const sendScope = new AsyncLocalStorage<AbortSignal>();

/**
 * fetch for the Inngest client: each request aborts after `ms`, or with the emitEvents call around it.
 * A failure is rethrown as undici's "fetch failed" TypeError (the SDK otherwise logs every failure of a
 * custom fetch as a misconfiguration), its cause the DeadlineError("inngest") or the network error.
 */
export function fetchWithDeadline(ms: number): typeof fetch {
  return async (input, init) => {
    const timeout = AbortSignal.timeout(ms);
    const signals = [timeout];
    if (init?.signal) signals.push(init.signal);
    const scope = sendScope.getStore();
    if (scope) signals.push(scope);
    const signal = AbortSignal.any(signals);
    try {
      return await fetch(input, { ...init, signal });
    } catch (error) {
      const cause = timeout.aborted
        ? new DeadlineError("inngest", ms)
        : signal.aborted && signal.reason instanceof DeadlineError
          ? signal.reason
          : error;
      throw new TypeError(`fetch failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    }
  };
}

/** The client for sending events with this configuration (one per isolate and config). */
export function inngestClient(config: Config): InngestClient {
  let client = clients.get(config);
  if (!client) {
    client = new Inngest({ ...clientOptions(config), fetch: fetchWithDeadline(SEND_DEADLINE_MS) }) as InngestClient;
    clients.set(config, client);
  }
  return client;
}

/** Dev mode without Inngest Cloud (npm start): a missing dev server is expected, and nothing waits for events. */
export function devWithoutCloud(config: Config): boolean {
  return Boolean(config.INNGEST_DEV && !config.INNGEST_EVENT_KEY);
}

/** Whether events can go anywhere: an event key (Inngest Cloud) or a dev server. */
export function canSendEvents(config: Config): boolean {
  return Boolean(config.INNGEST_EVENT_KEY || config.INNGEST_DEV);
}

type Sendable = Parameters<InngestClient["send"]>[0];

/**
 * After a failed send, further sends to the same Inngest address are skipped for a while instead of
 * each running the SDK's retries: an unreachable Inngest then costs a turn nothing (measured: with
 * every send retrying against a missing dev server, webhook acknowledgements went from 40 to 770 ms).
 */
const PAUSE_AFTER_FAILURE_MS = 30_000;
const pausedUntil = new Map<string, number>();

function eventsAddress(config: Config): string {
  return (
    config.INNGEST_BASE_URL ??
    (config.INNGEST_DEV && /^https?:/.test(config.INNGEST_DEV) ? config.INNGEST_DEV : config.INNGEST_DEV ? "dev" : "cloud")
  );
}

/**
 * Sends events without ever throwing or waiting longer than `deadlineMs` (SEND_DEADLINE_MS): for
 * callers whose own work must not fail or wait because Inngest is unreachable or hung (a chat turn).
 * Returns whether Inngest accepted them; a hung Inngest is a failure like any other (paused after).
 */
export async function emitEvents(
  config: Config,
  events: Sendable,
  context: Record<string, unknown>,
  deadlineMs = SEND_DEADLINE_MS,
): Promise<boolean> {
  if (!canSendEvents(config)) return false;
  const address = eventsAddress(config);
  if ((pausedUntil.get(address) ?? 0) > Date.now()) return false;
  try {
    const client = inngestClient(config);
    await withDeadline((signal) => sendScope.run(signal, () => client.send(events)), deadlineMs, "inngest");
    return true;
  } catch (error) {
    pausedUntil.set(address, Date.now() + PAUSE_AFTER_FAILURE_MS);
    // In dev mode a missing dev server is normal (npm start without `npx inngest-cli dev`), and npm
    // start's banner already says so once (ops/start.ts): nothing to add after every turn.
    if (devWithoutCloud(config)) return false;
    logJson("warn", {
      ...context,
      workflows: `${error instanceof DeadlineError ? "send timed out" : "send failed"}: events dropped for ${PAUSE_AFTER_FAILURE_MS / 1000} s`,
      error: describeError(error),
    });
    return false;
  }
}
