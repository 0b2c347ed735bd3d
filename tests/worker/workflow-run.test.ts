// A function run the way Inngest Cloud drives one, inside workerd: signed POSTs to /api/workflows,
// each answering with the step it ran (206) until the run ends (200), the memoized step outputs sent
// back each time. fact-extract does its real work through the Worker's own database connection.
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { inngestSignature } from "../../agents/workflows/signature";
import { recordMessage } from "../../db/repositories/memory";
import { call, newPerson, testDatabase } from "./helpers";

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
async function drive(fnId: string, event: { name: string; id: string; data: Record<string, unknown> }) {
  const steps: Record<string, unknown> = {};
  const stack: string[] = [];
  const runId = `run-${crypto.randomUUID()}`;
  for (let request = 1; request <= 10; request++) {
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
  throw new Error("run did not finish in 10 requests");
}

describe("POST /api/workflows (a run driven like the engine drives it)", () => {
  it("fact-extract records the turn's facts for its person", async () => {
    const person = await newPerson();
    const externalId = `web:${crypto.randomUUID()}`;
    // The turn records the message in Postgres; the event names it (agents/turn/turn.ts).
    await testDatabase().withUser(person.id, (tx) =>
      recordMessage(tx, person.id, { kind: "web", externalId }, "I'm vegetarian. My sister is Maria."),
    );
    const { output, requests, runId } = await drive("fact-extract", {
      name: "conversation/turn.completed",
      id: `turn-${person.id}-${externalId}`,
      data: { userId: person.id, channel: "web", source: { kind: "web", externalId } },
    });
    expect(output).toMatchObject({ facts: [{ outcome: "created" }, { outcome: "created" }] });
    const rows = (await testDatabase().withUser(person.id, (tx) =>
      tx.execute(sql`select f.statement, s.external_id from facts f join sources s on s.id = f.source_id order by f.statement`),
    )) as unknown as unknown[];
    expect(rows).toEqual([
      { statement: "Is vegetarian", external_id: externalId },
      { statement: "Sister is Maria", external_id: externalId },
    ]);
    expect(requests).toBe(2); // extract (and record), then the end of the run

    // One Langfuse trace for the run (its id), tagged workflow + fact-extract, a span per step; what
    // it keeps is ids and outcomes, not what the person said.
    const events = (await (await fetch(`${env.STAND_IN_URL}/__langfuse`)).json()) as Array<{ type: string; body: Record<string, unknown> }>;
    const trace = events.filter((e) => e.type === "trace-create" && e.body.id === runId);
    expect(trace[0]?.body).toMatchObject({ name: "fact-extract", userId: person.id, tags: ["workflow", "fact-extract"] });
    expect(trace.some((e) => JSON.stringify(e.body.output ?? "").includes('"outcome":"created"'))).toBe(true);
    const spans = events.filter((e) => e.type === "span-create" && e.body.traceId === runId);
    expect(spans.map((e) => e.body.name)).toEqual(["step:extract"]);
    expect(JSON.stringify([...trace, ...spans])).not.toMatch(/vegetarian|Maria/);
  });
});
