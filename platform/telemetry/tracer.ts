// Traces of agent turns in Langfuse: one trace per model turn with the person, the input, every tool
// call and the output, tagged by channel (Telegram: bot + message; web: web + chat). Without Langfuse
// keys the tracer is a no-op. Sending is batched and flushed with waitUntil, never on the reply's path.
// Every input and output passes scrubSecrets first, as for the other sinks: a person may paste a
// token or a sign-in link into a message, and tool and step outputs may echo one.
import { Langfuse } from "langfuse";
import type { Channel } from "../channel";
import type { Config } from "../config";
import { scrubSecrets } from "./scrub";

const CHANNEL_TAGS: Record<Channel, string[]> = {
  telegram: ["bot", "message"],
  web: ["web", "chat"],
};

interface TurnTrace {
  tool(name: string, input: unknown, output: unknown): void;
  end(result: { output: string; failed: boolean }): void;
}

export interface WorkflowTrace {
  step(name: string, output: unknown): void;
  end(result: { output: unknown; failed: boolean }): void;
}

export interface Tracer {
  startTurn(turn: { userId: string; channel: Channel; input: string; messageId: string }): TurnTrace;
  /** A workflow run (one Inngest function execution), tagged `workflow` and the function id. */
  startWorkflow(run: {
    functionId: string;
    runId: string;
    eventId: string | undefined;
    userId: string | undefined;
    input: unknown;
  }): WorkflowTrace;
  flush(): Promise<void>;
}

const noopTrace: TurnTrace & WorkflowTrace = { tool() {}, step() {}, end() {} };
const noopTracer: Tracer = { startTurn: () => noopTrace, startWorkflow: () => noopTrace, flush: async () => {} };

export function createTracer(config: Config): Tracer {
  if (!config.LANGFUSE_PUBLIC_KEY || !config.LANGFUSE_SECRET_KEY) return noopTracer;
  const langfuse = new Langfuse({
    publicKey: config.LANGFUSE_PUBLIC_KEY,
    secretKey: config.LANGFUSE_SECRET_KEY,
    baseUrl: config.LANGFUSE_BASE_URL ?? "https://cloud.langfuse.com",
    flushAt: 50,
    flushInterval: 0,
    release: config.ENVIRONMENT,
  });
  const scrub = <T>(value: T): T => scrubSecrets(value, config);
  return {
    startTurn({ userId, channel, input, messageId }) {
      const trace = langfuse.trace({
        name: channel === "telegram" ? "telegram-message" : "web-chat",
        userId,
        sessionId: userId,
        input: scrub(input),
        tags: CHANNEL_TAGS[channel],
        metadata: { messageId },
      });
      return {
        tool(name, toolInput, output) {
          trace.span({ name: `tool:${name}`, input: scrub(toolInput), output: scrub(output) });
        },
        end({ output, failed }) {
          trace.update({ output: scrub(output), ...(failed ? { metadata: { messageId, failed: true } } : {}) });
        },
      };
    },
    startWorkflow({ functionId, runId, eventId, userId, input }) {
      // The run id is the trace id: the several requests of one run add to one trace.
      const trace = langfuse.trace({
        id: runId,
        name: functionId,
        ...(userId ? { userId } : {}),
        input: scrub(input),
        tags: ["workflow", functionId],
        metadata: { runId, eventId },
      });
      return {
        step(name, output) {
          trace.span({ name: `step:${name}`, output: scrub(output) });
        },
        end({ output, failed }) {
          trace.update({ output: scrub(output), ...(failed ? { metadata: { runId, eventId, failed: true } } : {}) });
        },
      };
    },
    flush: () => langfuse.flushAsync(),
  };
}
