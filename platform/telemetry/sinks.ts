// The product and log sinks, each optional (no key → a no-op, never a crash), batched in memory and
// sent by flush(), which callers hand to waitUntil so nothing waits on a sink:
//   PostHog  server-side product events (EU host by default): distinct id = the person's users.id,
//            properties limited to a few safe fields (channel, type, method, count).
//   Axiom    structured JSON logs into AXIOM_DATASET (soma-logs): one line per request and per turn.
// Payloads are built only from the fields below — never a message text, cookie or token — and
// scrubbed of every configured secret value before they leave, as a second line of defence.
import type { Channel } from "../channel";
import type { Config } from "../config";
import { describeError, logJson } from "../log";
import { scrubSecrets } from "./scrub";

/** How a person signed in: a /login link, the Login Widget, Google, the developer button, the Mini App. */
export type LoginMethod = "link" | "telegram" | "google" | "dev" | "mini-app";

type ProductEvent =
  | { event: "user_signed_up"; userId: string; properties: { channel: "telegram" | "google" | "dev" } }
  | { event: "message_received"; userId: string; properties: { channel: Channel } }
  | { event: "memory_captured"; userId: string; properties: { type: string; created: boolean } }
  | { event: "memory_recalled"; userId: string; properties: { results: number; typed: boolean } }
  | { event: "login"; userId: string; properties: { method: LoginMethod } };

interface LogLine {
  kind: "request" | "turn";
  requestId?: string;
  userId?: string;
  route?: string;
  method?: string;
  status?: number;
  durationMs: number;
  channel?: Channel;
  failed?: boolean;
  tools?: number;
}

export interface Telemetry {
  capture(event: ProductEvent): void;
  log(line: LogLine): void;
  /** Sends what was batched; never rejects. */
  flush(): Promise<void>;
}

export const POSTHOG_EU_HOST = "https://eu.i.posthog.com";
const AXIOM_API = "https://api.axiom.co";

export function createTelemetry(config: Config): Telemetry {
  const events: Array<Record<string, unknown>> = [];
  const lines: Array<Record<string, unknown>> = [];
  const posthog = config.POSTHOG_API_KEY;
  const axiom = config.AXIOM_TOKEN && config.AXIOM_DATASET ? { token: config.AXIOM_TOKEN, dataset: config.AXIOM_DATASET } : null;
  return {
    capture({ event, userId, properties }) {
      if (posthog)
        events.push({
          event,
          distinct_id: userId,
          properties: { ...properties, $lib: "soma-worker", environment: config.ENVIRONMENT },
          timestamp: new Date().toISOString(),
        });
    },
    log(line) {
      if (axiom) lines.push({ _time: new Date().toISOString(), service: "soma", environment: config.ENVIRONMENT, ...line });
    },
    async flush() {
      const sends: Array<Promise<void>> = [];
      if (posthog && events.length) {
        const batch = events.splice(0);
        // PostHog authenticates by the api_key in the body; only the batch is what it stores.
        sends.push(
          post(
            "posthog",
            `${(config.POSTHOG_HOST ?? POSTHOG_EU_HOST).replace(/\/+$/, "")}/batch/`,
            {},
            { api_key: posthog, batch: scrubSecrets(batch, config) },
          ),
        );
      }
      if (axiom && lines.length) {
        const batch = lines.splice(0);
        const url = `${(config.AXIOM_URL ?? AXIOM_API).replace(/\/+$/, "")}/v1/datasets/${encodeURIComponent(axiom.dataset)}/ingest`;
        sends.push(post("axiom", url, { authorization: `Bearer ${axiom.token}` }, scrubSecrets(batch, config)));
      }
      await Promise.all(sends);
    },
  };
}

async function post(sink: string, url: string, headers: Record<string, string>, body: unknown): Promise<void> {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(5_000),
    });
    await response.body?.cancel();
    if (!response.ok) logJson("warn", { telemetry: sink, status: response.status });
  } catch (error) {
    logJson("warn", { telemetry: sink, error: describeError(error) });
  }
}
