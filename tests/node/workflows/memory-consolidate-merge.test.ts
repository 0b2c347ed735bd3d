// memory-consolidate with @inngest/test, merging: near-duplicate entities merged into the older one on
// the test Postgres, under RLS (alias, properties, sources, edges and events follow), different things
// with similar names kept apart, nothing merged twice or across people or outside the lookback window.
// A run returns counts only, so what was merged is read back from Postgres.
// Postgres is shared with test files running in parallel, so full runs have their "people" step
// mocked to this test's people (a real run would merge other files' entities under their feet) and
// the real listing is checked alone with executeStep. Missing embeddings: memory-consolidate-embeddings.test.ts.
import { InngestTestEngine } from "@inngest/test";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { EMBEDDING_DIMENSIONS } from "../../../db/schema";
import { relateEntities } from "../../../db/repositories/memory";
import { langfuseEvents, newPerson, runOnce, testDb, testWorkflows } from "./harness";
import { capture, consolidate, nightly, type MergeOutput } from "./memory-consolidate-fixtures";

const DAY = 86_400_000;

interface EntityRow {
  id: string;
  type: string;
  name: string;
  properties: Record<string, unknown>;
  source_id: string | null;
  updated_at: string | Date;
}

function unitVector(axis: number): number[] {
  const v = new Array<number>(EMBEDDING_DIMENSIONS).fill(0);
  v[axis] = 1;
  return v;
}

async function entitiesOf(userId: string): Promise<EntityRow[]> {
  return (await testDb().withUser(userId, (tx) =>
    tx.execute(sql`select id, type, name, properties, source_id, updated_at from entities order by type, name, created_at`),
  )) as unknown as EntityRow[];
}

/** A uuid[] column as the driver returns it (parsed, or Postgres's text form "{a,b}"). */
const uuids = (value: string[] | string) =>
  Array.isArray(value)
    ? value
    : value
        .replace(/^\{|\}$/g, "")
        .split(",")
        .filter(Boolean);

const names = (rows: EntityRow[]) => rows.map((r) => `${r.type}:${r.name}`);

describe("memory-consolidate", () => {
  it("merges a near-duplicate into the older entity: alias, properties, source, edges and events follow", async () => {
    const person = await newPerson();
    const hobbit = await capture(person.id, "book", "The Hobbit", { properties: { rating: 5, author: "J.R.R. Tolkien" } });
    const tolkien = await capture(person.id, "person", "J.R.R. Tolkien");
    const shire = await capture(person.id, "place", "The Shire");
    const dup = await capture(person.id, "book", "Hobbit", { properties: { author: "Tolkien", pages: 310 } });
    const edges = await testDb().withUser(person.id, async (tx) => ({
      wrote: await relateEntities(tx, person.id, { fromId: tolkien.id, toId: dup.id, type: "wrote", sourceId: dup.sourceId }),
      setIn: await relateEntities(tx, person.id, { fromId: dup.id, toId: shire.id, type: "set_in", sourceId: null }),
    }));
    const [event] = (await testDb().withUser(person.id, (tx) =>
      tx.execute(sql`insert into events (user_id, kind, occurred_at, payload, entity_ids)
                     values (${person.id}, 'note', now(), '{"text":"finished the Hobbit"}', array[${tolkien.id}, ${dup.id}]::uuid[]) returning id`),
    )) as unknown as Array<{ id: string }>;

    const { output } = await consolidate([person.id]);
    expect(output).toMatchObject({ people: 1, embedded: 0, merged: 1 });

    const rows = await entitiesOf(person.id);
    expect(names(rows)).toEqual(["book:The Hobbit", "person:J.R.R. Tolkien", "place:The Shire"]);
    const kept = rows.find((r) => r.id === hobbit.id)!;
    // The survivor's own values win; the merged one's fill the gaps.
    expect(kept.properties).toEqual({
      rating: 5,
      author: "J.R.R. Tolkien",
      pages: 310,
      aliases: ["Hobbit"],
      mergedSources: [dup.sourceId],
    });
    expect(kept.source_id).toBe(hobbit.sourceId);

    const after = await testDb().withUser(person.id, async (tx) => ({
      edges: (await tx.execute(sql`select id, from_id, to_id, type from edges order by type`)) as unknown as Array<{
        id: string;
        from_id: string;
        to_id: string;
        type: string;
      }>,
      event: (
        (await tx.execute(sql`select entity_ids from events where id = ${event!.id}`)) as unknown as Array<{
          entity_ids: string[] | string;
        }>
      )[0],
      sources: (await tx.execute(sql`select id from sources where id = ${dup.sourceId}`)) as unknown as unknown[],
    }));
    expect(after.edges).toEqual([
      { id: edges.setIn, from_id: hobbit.id, to_id: shire.id, type: "set_in" },
      { id: edges.wrote, from_id: tolkien.id, to_id: hobbit.id, type: "wrote" },
    ]);
    expect(uuids(after.event!.entity_ids)).toEqual([tolkien.id, hobbit.id]);
    expect(after.sources).toHaveLength(1); // provenance rows are never touched
  });

  it("keeps different things with similar names apart: Dune / Dune Messiah, sequels, other types", async () => {
    const person = await newPerson();
    await capture(person.id, "book", "Dune");
    await capture(person.id, "book", "Dune Messiah");
    await capture(person.id, "movie", "Rocky II");
    await capture(person.id, "movie", "Rocky III");
    await capture(person.id, "movie", "Rocky");
    await capture(person.id, "movie", "Dune"); // the same name as the book, another type
    await capture(person.id, "movie", "The Dune"); // …and this one's twin is a movie, not the book
    await capture(person.id, "book", "Harry Potter 2");
    await capture(person.id, "book", "Harry Potter 3");
    const before = await entitiesOf(person.id);

    const { output } = await consolidate([person.id]);
    const rows = await entitiesOf(person.id);
    expect(output.merged).toBe(1);
    expect(rows.find((r) => r.type === "movie" && r.name === "Dune")?.properties).toMatchObject({ aliases: ["The Dune"] });
    expect(names(rows)).toEqual([
      "book:Dune",
      "book:Dune Messiah",
      "book:Harry Potter 2",
      "book:Harry Potter 3",
      "movie:Dune",
      "movie:Rocky",
      "movie:Rocky II",
      "movie:Rocky III",
    ]);
    // Nothing but the one merge touched the rest.
    for (const row of rows.filter((r) => r.name !== "Dune" || r.type !== "movie")) {
      expect(row).toEqual(before.find((b) => b.id === row.id));
    }
  });

  it("merges spelling variants only when trigrams and (when present) embeddings agree", async () => {
    const person = await newPerson();
    const same = unitVector(1);
    // Trigram similarity 0.76 and identical embeddings: one writer.
    const dostoevsky = await capture(person.id, "person", "Fyodor Dostoevsky", { embedding: same });
    await capture(person.id, "person", "Fyodor Dostoyevsky", { embedding: same });
    // Trigram similarity 0.88, but the embeddings say these are unrelated: kept apart.
    await capture(person.id, "book", "The Fellowship of the Ring", { embedding: unitVector(2) });
    await capture(person.id, "book", "Fellowship of the Rings", { embedding: unitVector(3) });
    // Accents, apostrophes and leading articles do not make a different name, whatever the trigrams say.
    const marquez = await capture(person.id, "person", "Gabriel García Márquez");
    await capture(person.id, "person", "Gabriel Garcia Marquez");
    const stone = await capture(person.id, "book", "Harry Potter and the Philosopher's Stone");
    await capture(person.id, "book", "Harry Potter and the Philosophers Stone");
    // Trigram similarity 0.71, below the bar: kept apart.
    await capture(person.id, "person", "Katherine Johnson");
    await capture(person.id, "person", "Katharine Johnson");

    const { output } = await consolidate([person.id]);
    expect(output.merged).toBe(3);
    const rows = await entitiesOf(person.id);
    const aliasesOf = (id: string) => rows.find((r) => r.id === id)?.properties.aliases;
    expect(aliasesOf(dostoevsky.id)).toEqual(["Fyodor Dostoyevsky"]);
    expect(aliasesOf(marquez.id)).toEqual(["Gabriel Garcia Marquez"]);
    expect(aliasesOf(stone.id)).toEqual(["Harry Potter and the Philosophers Stone"]);
    expect(names(rows)).toEqual([
      "book:Fellowship of the Rings",
      "book:Harry Potter and the Philosopher's Stone",
      "book:The Fellowship of the Ring",
      "person:Fyodor Dostoevsky",
      "person:Gabriel García Márquez",
      "person:Katharine Johnson",
      "person:Katherine Johnson",
    ]);
  });

  it("merges nothing more on a second run, and merges a name captured again after a merge without a second alias", async () => {
    const person = await newPerson();
    const hobbit = await capture(person.id, "book", "The Hobbit");
    const first = await capture(person.id, "book", "Hobbit");
    expect((await consolidate([person.id])).output.merged).toBe(1);
    const once = await entitiesOf(person.id);

    const again = await consolidate([person.id]);
    expect(again.output).toMatchObject({ people: 1, embedded: 0, merged: 0 });
    expect(await entitiesOf(person.id)).toEqual(once);

    // "Hobbit" said again the next day is a new row (capture dedupes by name, not by alias)…
    const second = await capture(person.id, "book", "Hobbit");
    expect(second.id).not.toBe(first.id);
    const third = await consolidate([person.id]);
    expect(third.output.merged).toBe(1);
    const [kept] = await entitiesOf(person.id);
    expect(kept!.id).toBe(hobbit.id);
    // …and merging it again lists the alias once, and both of the merged sources.
    expect(kept!.properties).toEqual({ aliases: ["Hobbit"], mergedSources: [first.sourceId, second.sourceId] });
  });

  it("keeps the aliases and merged sources the merged entity already had", async () => {
    const person = await newPerson();
    const earlier = crypto.randomUUID();
    const hobbit = await capture(person.id, "book", "The Hobbit", { properties: { aliases: ["Der kleine Hobbit"] } });
    const dup = await capture(person.id, "book", "Hobbit", { properties: { aliases: ["There and Back Again"], mergedSources: [earlier] } });
    await consolidate([person.id]);
    const [kept] = await entitiesOf(person.id);
    expect(kept!.id).toBe(hobbit.id);
    expect(kept!.properties).toEqual({
      aliases: ["Der kleine Hobbit", "There and Back Again", "Hobbit"],
      mergedSources: [earlier, dup.sourceId],
    });
  });

  it("never merges across people, and leaves other people's entities untouched", async () => {
    const alice = await newPerson();
    const bob = await newPerson();
    const carol = await newPerson();
    const bobsHobbit = await capture(bob.id, "book", "The Hobbit"); // older than Alice's
    const alicesHobbit = await capture(alice.id, "book", "Hobbit");
    const alicesDune = await capture(alice.id, "book", "Dune");
    const bobsDup = await capture(bob.id, "book", "Hobbit");
    // Carol has duplicates too, but is not among the people this run walks.
    await capture(carol.id, "book", "The Hobbit");
    await capture(carol.id, "book", "Hobbit");
    const aliceBefore = await entitiesOf(alice.id);
    const carolBefore = await entitiesOf(carol.id);

    const { output } = await consolidate([alice.id, bob.id]);
    expect(output).toMatchObject({ people: 2, embedded: 0, merged: 1 });
    expect(await entitiesOf(alice.id)).toEqual(aliceBefore);
    expect((await entitiesOf(alice.id)).map((r) => r.id).sort()).toEqual([alicesHobbit.id, alicesDune.id].sort());
    expect(await entitiesOf(carol.id)).toEqual(carolBefore);
    const bobs = await entitiesOf(bob.id);
    expect(bobs.map((r) => r.id)).toEqual([bobsHobbit.id]);
    expect(bobs[0]!.properties).toEqual({ aliases: ["Hobbit"], mergedSources: [bobsDup.sourceId] });
  });

  it("only looks at entities touched in the last two days", async () => {
    const person = await newPerson();
    await capture(person.id, "book", "The Hobbit");
    await capture(person.id, "book", "Hobbit");
    // Three days on, neither was touched within the lookback window.
    const { output } = await consolidate([person.id], new Date(Date.now() + 3 * DAY));
    expect(output).toMatchObject({ merged: 0, compared: 0 });
    expect(names(await entitiesOf(person.id))).toEqual(["book:Hobbit", "book:The Hobbit"]);
  });

  it("walks everyone (the real listing, run alone) and traces the run tagged workflow + memory-consolidate", async () => {
    const withChat = await newPerson({ telegram: true });
    const withoutChat = await newPerson();
    const { result } = await new InngestTestEngine({ function: testWorkflows().functions.memoryConsolidate }).executeStep("people", {
      events: [nightly],
    });
    expect(result).toEqual(expect.arrayContaining([withChat.id, withoutChat.id]));

    const person = await newPerson();
    await capture(person.id, "book", "The Hobbit");
    await capture(person.id, "book", "Hobbit");
    const { deps, functions } = testWorkflows();
    const { result: output, ctx } = await runOnce(functions.memoryConsolidate, nightly, {
      steps: [{ id: "people", handler: () => [person.id] }],
    });
    expect((output as MergeOutput).merged).toBe(1);
    await deps.tracer.flush(); // the serve handler's per-request flush does not run under @inngest/test
    const trace = (await langfuseEvents()).filter((e) => e.type === "trace-create" && e.body.id === ctx.runId);
    expect(trace[0]?.body).toMatchObject({ name: "memory-consolidate", tags: ["workflow", "memory-consolidate"] });
    expect(trace[0]?.body.userId).toBeUndefined(); // a cron run is nobody's
    expect(trace.some((t) => JSON.stringify(t.body.output ?? null).includes(`"merged":1`))).toBe(true);
    // Counts, never a name: nothing Inngest or Langfuse keeps of the run says what was merged.
    expect(JSON.stringify(trace)).not.toMatch(/Hobbit/);
  });
});
