// A function run the way Inngest Cloud drives one, inside workerd: signed POSTs to /api/workflows,
// each answering with the step it ran (206) until the run ends (200), the memoized step outputs sent
// back each time. fact-extract does its real work through the Worker's own database connection.
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { recordMessage } from "../../db/repositories/memory";
import { newPerson, testDatabase } from "./helpers";
import { drive } from "./workflow-drive";

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
