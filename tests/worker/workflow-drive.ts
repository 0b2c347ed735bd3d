// Drives a workflow function's run the way Inngest Cloud does, inside workerd: signed POSTs to
// /api/workflows, each answering with the step it ran (206) until the run ends (200), the memoized
// step outputs sent back each time.
import { env } from "cloudflare:workers";
import { inngestSignature } from "../../agents/workflows/signature";
import { call } from "./helpers";

/** RFC 8785-style canonical JSON (keys sorted at every level): what the SDK verifies the signature over. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

function sign(body: string): Promise<string> {
  return inngestSignature(body, env.INNGEST_SIGNING_KEY);
}

/** Drives one run to its end like the engine does; returns the final output and the requests made. */
export async function drive(fnId: string, event: { name: string; id: string; data: Record<string, unknown> }, maxRequests = 10) {
  const steps: Record<string, unknown> = {};
  const stack: string[] = [];
  const runId = `run-${crypto.randomUUID()}`;
  for (let request = 1; request <= maxRequests; request++) {
    const body = canonical({
      event,
      events: [event],
      steps,
      ctx: { run_id: runId, attempt: 0, disable_immediate_execution: false, use_api: false, stack: { stack, current: stack.length } },
      version: 2,
    });
    const response = await call(`/api/workflows?fnId=soma-${fnId}&stepId=step`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-inngest-signature": await sign(body) },
      body,
    });
    const output = (await response.json()) as unknown;
    if (response.status === 200) return { output, requests: request, runId };
    if (response.status !== 206) throw new Error(`run answered ${response.status}: ${JSON.stringify(output)}`);
    for (const op of output as Array<{ id: string; op: string; data?: unknown }>) {
      steps[op.id] = { type: "data", data: op.data ?? null };
      stack.push(op.id);
    }
  }
  throw new Error(`run did not finish in ${maxRequests} requests`);
}
