// Guards time in memory: every memory knows when it was told and, where the person said so, when it
// happened; memory_recall's since/until bound either (happened if known, else told), a date being the
// whole day on the person's clock; a window that ends before it starts is the model's error to fix.
import { generateText, isStepCount } from "ai";
import { describe, expect, it } from "vitest";
import { localEmbedder } from "../../agents/integrations/model/embeddings";
import { memoryTools } from "../../agents/turn/tools/memory-tools";
import type { Person } from "../../db/repositories/auth";
import { recordFact } from "../../db/repositories/facts";
import type { RecallResult } from "../../db/repositories/memory";
import { newPerson, testDatabase } from "./helpers";
import { scriptedModel, type Step } from "./scripted-model";

/** One turn of scripted tool calls; every tool result (or tool error) in order. */
async function turn(person: Person, steps: Step[], timezone?: string) {
  const result = await generateText({
    model: scriptedModel([...steps, { text: "ok" }]),
    tools: memoryTools({
      db: testDatabase(),
      userId: person.id,
      embedder: localEmbedder,
      source: { kind: "test", externalId: crypto.randomUUID(), payload: { text: "x" } },
      ...(timezone ? { timezone } : {}),
    }),
    stopWhen: isStepCount(steps.length + 1),
    prompt: "x",
  });
  return result.steps.flatMap((step) =>
    step.content
      .filter((p) => p.type === "tool-result" || p.type === "tool-error")
      .map((p) => (p.type === "tool-result" ? p.output : { toolError: String(p.error) })),
  );
}

const day = (offsetDays: number) => new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);
const names = (results: unknown) => (results as RecallResult[]).map((r) => (r.kind === "entity" ? r.entity.name : r.fact.statement));

describe("when a memory was told and when it happened", () => {
  it("keeps happenedAt where the person gave it and toldAt always, and recall filters on happened-else-told", async () => {
    const person = await newPerson();
    const [dune, solaris, anathem] = await turn(person, [
      { tool: "memory_capture", input: { type: "book", name: "Dune", happenedAt: day(-40) } },
      { tool: "memory_capture", input: { type: "book", name: "Solaris" } },
      { tool: "memory_capture", input: { type: "book", name: "Anathem", happenedAt: day(-800) } },
    ]);
    expect([dune, solaris, anathem].every((r) => (r as { created: boolean }).created)).toBe(true);

    const [all] = await turn(person, [{ tool: "memory_recall", input: { query: "books", type: "book" } }]);
    const byName = Object.fromEntries((all as RecallResult[]).map((r) => [r.kind === "entity" ? r.entity.name : "", r]));
    expect(byName.Dune).toMatchObject({ happenedAt: `${day(-40)}T00:00:00.000Z` });
    expect(byName.Solaris).toMatchObject({ happenedAt: null });
    expect(Date.now() - Date.parse(byName.Solaris!.toldAt)).toBeLessThan(60_000);

    const [lastTwoMonths, today, before, untilOnly] = await turn(person, [
      { tool: "memory_recall", input: { query: "which books did I read?", type: "book", since: day(-60), until: day(-1) } },
      { tool: "memory_recall", input: { query: "which books did I read?", type: "book", since: day(0) } },
      { tool: "memory_recall", input: { query: "which books did I read?", type: "book", until: day(-41) } },
      { tool: "memory_recall", input: { query: "dune", until: day(-40) } },
    ]);
    expect(names(lastTwoMonths)).toEqual(["Dune"]);
    expect(names(today)).toEqual(["Solaris"]);
    expect(names(before)).toEqual(["Anathem"]);
    expect(names(untilOnly)).toContain("Dune"); // until is inclusive: the whole day
  });

  it("without a type a time bound lists what is in the window; facts are bounded by when they were told", async () => {
    const person = await newPerson();
    await testDatabase().withUser(person.id, (tx) =>
      recordFact(tx, person.id, {
        statement: "Lives in Lisbon",
        subject: "home city",
        category: "location",
        confidence: 1,
        embedding: null,
        sourceId: null,
      }),
    );
    await turn(person, [
      { tool: "memory_capture", input: { type: "place", name: "Porto", happenedAt: day(-3) } },
      { tool: "memory_capture", input: { type: "movie", name: "Stalker", happenedAt: day(-30) } },
    ]);
    const [lastWeek, tomorrowOn] = await turn(person, [
      { tool: "memory_recall", input: { query: "what did I do", since: day(-7), until: day(0) } },
      { tool: "memory_recall", input: { query: "lisbon", since: day(1) } },
    ]);
    expect(names(lastWeek)).toEqual(expect.arrayContaining(["Porto", "Lives in Lisbon"]));
    expect(names(lastWeek)).not.toContain("Stalker");
    expect((lastWeek as RecallResult[]).find((r) => r.kind === "entity")!.matchedBy).toContain("time");
    expect(tomorrowOn).toEqual([]);
  });

  it("reads a date as the whole day in the person's timezone, a local time in it, and an offset as given", async () => {
    const person = await newPerson();
    await turn(
      person,
      [
        { tool: "memory_capture", input: { type: "event", name: "Concert", happenedAt: "2026-03-10" } },
        { tool: "memory_capture", input: { type: "event", name: "Dinner", happenedAt: "2026-03-10T20:30" } },
        { tool: "memory_capture", input: { type: "event", name: "Flight", happenedAt: "2026-03-10T23:30:00Z" } },
      ],
      "Pacific/Auckland",
    );
    const [march10, march11] = await turn(
      person,
      [
        { tool: "memory_recall", input: { query: "events", type: "event", since: "2026-03-10", until: "2026-03-10" } },
        { tool: "memory_recall", input: { query: "events", type: "event", since: "2026-03-11", until: "2026-03-11" } },
      ],
      "Pacific/Auckland",
    );
    // Auckland is UTC+13 in March: its 10th runs from 09T11:00Z to 10T11:00Z.
    const at = Object.fromEntries((march10 as RecallResult[]).map((r) => [r.kind === "entity" ? r.entity.name : "", r.happenedAt]));
    expect(at).toEqual({ Concert: "2026-03-09T11:00:00.000Z", Dinner: "2026-03-10T07:30:00.000Z" });
    expect(names(march11)).toEqual(["Flight"]); // 23:30Z on the 10th is the 11th in Auckland
  });

  it("answers a window that ends before it starts, or a date that is no date, as the model's error", async () => {
    const person = await newPerson();
    const [backwards, notADate, badCapture] = await turn(person, [
      { tool: "memory_recall", input: { query: "books", since: "2026-05-10", until: "2026-05-01" } },
      { tool: "memory_recall", input: { query: "books", since: "last week" } },
      { tool: "memory_capture", input: { type: "book", name: "Dune", happenedAt: "yesterday" } },
    ]);
    expect(backwards).toEqual({ error: "until (2026-05-01) is before since (2026-05-10): give until on or after since" });
    expect(notADate).toMatchObject({ toolError: expect.stringContaining("since") });
    expect(badCapture).toMatchObject({ toolError: expect.stringContaining("happenedAt") });
    const [sameDay] = await turn(person, [{ tool: "memory_recall", input: { query: "books", since: "2026-05-01", until: "2026-05-01" } }]);
    expect(sameDay).toEqual([]);
  });
});
