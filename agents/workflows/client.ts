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

/** In dev mode a missing dev server is normal (npm start without inngest-cli): say so once, not per turn. */
let devServerMissingLogged = false;

/**
 * Sends events without ever throwing: for callers whose own work must not fail or wait because
 * Inngest is unreachable (a chat turn). Returns whether Inngest accepted them.
 */
export async function emitEvents(config: Config, events: Sendable, context: Record<string, unknown>): Promise<boolean> {
  if (!canSendEvents(config)) return false;
  try {
    await inngestClient(config).send(events);
    return true;
  } catch (error) {
    const dev = Boolean(config.INNGEST_DEV) && !config.INNGEST_EVENT_KEY;
    if (!dev || !devServerMissingLogged) {
      logJson("warn", { ...context, workflows: dev ? "no Inngest dev server: workflow events are dropped (run npx inngest-cli dev)" : "send failed", error: describeError(error) });
    }
    devServerMissingLogged ||= dev;
    return false;
  }
}
