// The Inngest client of the app "soma", configured from the validated Worker config (a Worker has no
// process.env for the SDK to read), and the one way the rest of Soma emits workflow events.
import { Inngest } from "inngest";
import type { Config } from "../config";
import { describeError, logJson } from "../log";

export const INNGEST_APP_ID = "soma";

export type InngestClient = Inngest<{ id: typeof INNGEST_APP_ID }>;

const clients = new WeakMap<Config, InngestClient>();

/** Client options from the validated config (event key, API base URL, dev mode). */
export function clientOptions(config: Config) {
  const dev = config.INNGEST_DEV;
  return {
    id: INNGEST_APP_ID,
    ...(config.INNGEST_EVENT_KEY ? { eventKey: config.INNGEST_EVENT_KEY } : {}),
    ...(config.INNGEST_BASE_URL ? { baseUrl: config.INNGEST_BASE_URL } : dev && /^https?:/.test(dev) ? { baseUrl: dev } : {}),
    ...(dev ? { isDev: true } : {}),
  } as const;
}

/** The client for sending events with this configuration (one per isolate and config). */
export function inngestClient(config: Config): InngestClient {
  let client = clients.get(config);
  if (!client) {
    client = new Inngest(clientOptions(config)) as InngestClient;
    clients.set(config, client);
  }
  return client;
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
  return config.INNGEST_BASE_URL ?? (config.INNGEST_DEV && /^https?:/.test(config.INNGEST_DEV) ? config.INNGEST_DEV : config.INNGEST_DEV ? "dev" : "cloud");
}

/**
 * Sends events without ever throwing: for callers whose own work must not fail or wait because
 * Inngest is unreachable (a chat turn). Returns whether Inngest accepted them.
 */
export async function emitEvents(config: Config, events: Sendable, context: Record<string, unknown>): Promise<boolean> {
  if (!canSendEvents(config)) return false;
  const address = eventsAddress(config);
  if ((pausedUntil.get(address) ?? 0) > Date.now()) return false;
  try {
    await inngestClient(config).send(events);
    return true;
  } catch (error) {
    pausedUntil.set(address, Date.now() + PAUSE_AFTER_FAILURE_MS);
    // In dev mode a missing dev server is normal (npm start without `npx inngest-cli dev`).
    const dev = Boolean(config.INNGEST_DEV) && !config.INNGEST_EVENT_KEY;
    logJson("warn", {
      ...context,
      workflows: `${dev ? "no Inngest dev server" : "send failed"}: events dropped for ${PAUSE_AFTER_FAILURE_MS / 1000} s`,
      error: describeError(error),
    });
    return false;
  }
}
