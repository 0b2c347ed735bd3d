// memory-consolidate with @inngest/test, isolation and bounds: one person whose consolidation fails
// (their merge times out, say) is logged and skipped while everyone else in that batch and in later
// ones is embedded and merged; a person with thousands of alike names costs a bounded number of
// comparisons; and a row dated in the future never counts as recently touched. The "people" step is
// mocked to this test's people (Postgres is shared with test files running in parallel).
import { sql } from "drizzle-orm";
import { describe, expect, inject, it } from "vitest";
import { CONSOLIDATE_PEOPLE_PER_STEP } from "../../../agents/workflows/functions/memory-consolidate";
import { Database, type Tx } from "../../../db/database";
import { MERGE_NEIGHBOURS, MERGE_RECENT_LIMIT } from "../../../db/repositories/consolidate";
import { newPerson, runOnce, testDb, testWorkflows } from "./harness";
import { capture, consolidate, type MergeOutput, nightly } from "./memory-consolidate-fixtures";

/** The test Postgres, except that every transaction of `poisoned` fails as a statement timeout does. */
class PoisonedDatabase extends Database {
  constructor(private readonly poisoned: string) {
    super(inject("databaseUrl"), { max: 2 });
  }

  override withUser<T>(userId: string, work: (tx: Tx) => Promise<T>): Promise<T> {
    if (userId !== this.poisoned) return super.withUser(userId, work);
    // SQLSTATE 57014 (query_canceled): transient by kind, and yet this person's own data, not an outage.
    return Promise.reject(Object.assign(new Error("canceling statement due to statement timeout"), { code: "57014" }));
  }
}

async function entityNames(userId: string): Promise<string[]> {
  const rows = (await testDb().withUser(userId, (tx) =>
    tx.execute(sql`select type || ':' || name as name from entities order by type, name`),
  )) as unknown as Array<{ name: string }>;
  return rows.map((r) => r.name);
}

async function missingEmbeddings(userId: string): Promise<number> {
  const [row] = (await testDb().withUser(userId, (tx) =>
    tx.execute(sql`select count(*)::int as n from entities where embedding is null`),
  )) as unknown as Array<{ n: number }>;
  return row!.n;
}

/** `count` active entities of one type whose names are all alike (trigram-similar to one another). */
async function alikeNames(userId: string, count: number, options: { type?: string; updatedAt?: string } = {}) {
  const type = options.type ?? "note";
  await testDb().withUser(userId, (tx) =>
    tx.execute(sql`
      insert into entities (user_id, type, name, normalized_name, updated_at)
      select ${userId}, ${type}, 'Weekly grocery list number ' || g, 'weekly grocery list number ' || g,
             coalesce(${options.updatedAt ?? null}::timestamptz, now())
      from generate_series(1, ${count}) g`),
  );
}

describe("memory-consolidate: one person at a time, bounded", () => {
  it("skips a person whose consolidation fails; the others in that batch and in the next are embedded and merged", async () => {
    const poisoned = await newPerson();
    await capture(poisoned.id, "book", "The Hobbit");
    await capture(poisoned.id, "book", "Hobbit");
    const alice = await newPerson();
    const bob = await newPerson();
    for (const person of [alice, bob]) {
      await capture(person.id, "book", "The Hobbit");
      await capture(person.id, "book", "Hobbit");
      await capture(person.id, "place", "Lisbon", { embedding: null });
    }
    // People without rows fill the first step, so that Bob is consolidated in the second.
    const fillers = Array.from({ length: CONSOLIDATE_PEOPLE_PER_STEP - 2 }, () => crypto.randomUUID());
    const { deps } = testWorkflows();
    const db = new PoisonedDatabase(poisoned.id);
    try {
      const { createWorkflows } = await import("../../../agents/workflows");
      const { functions } = createWorkflows({ ...deps, db });
      const { result, error, ctx } = await runOnce(functions.memoryConsolidate, nightly, {
        steps: [{ id: "people", handler: () => [poisoned.id, alice.id, ...fillers, bob.id] }],
      });
      expect(error).toBeUndefined();
      expect(result).toMatchObject({ people: CONSOLIDATE_PEOPLE_PER_STEP + 1, merged: 2, embedded: 2, failed: 1 });
      const steps = (ctx.step.run as unknown as { mock: { calls: Array<[string]> } }).mock.calls.map(([id]) => id);
      expect(steps).toEqual(["people", "merge-0", "merge-1"]);
    } finally {
      await db.close();
    }
    for (const person of [alice, bob]) {
      expect(await entityNames(person.id)).toEqual(["book:The Hobbit", "place:Lisbon"]);
      expect(await missingEmbeddings(person.id)).toBe(0);
    }
    expect(await entityNames(poisoned.id)).toEqual(["book:Hobbit", "book:The Hobbit"]);
  });

  it("compares a bounded number of pairs for a person with thousands of alike names, and still merges their duplicate", async () => {
    const person = await newPerson();
    await alikeNames(person.id, 2_000);
    // Touched after the alike names: among the most recent, so compared tonight.
    await capture(person.id, "book", "The Hobbit");
    await capture(person.id, "book", "Hobbit");

    const { output } = await consolidate([person.id]);
    // Unbounded, every name would meet every older alike one: about two million pairs.
    expect(output.compared).toBeGreaterThan(0);
    expect(output.compared).toBeLessThanOrEqual(MERGE_RECENT_LIMIT * MERGE_NEIGHBOURS);
    expect(output.merged).toBe(1);
    expect(output.failed).toBeUndefined();
    expect((await entityNames(person.id)).filter((n) => n.startsWith("book:"))).toEqual(["book:The Hobbit"]);
  });

  it("never counts a row dated in the future as recently touched: it neither crowds out tonight's rows nor is compared every night", async () => {
    const person = await newPerson();
    const nextYear = new Date(Date.now() + 365 * 86_400_000).toISOString();
    // More alike future-dated rows than a night compares, and a duplicate pair among them.
    await alikeNames(person.id, MERGE_RECENT_LIMIT + 50, { updatedAt: nextYear });
    await testDb().withUser(person.id, (tx) =>
      tx.execute(sql`insert into entities (user_id, type, name, normalized_name, updated_at)
                     values (${person.id}, 'movie', 'Dune', 'dune', ${nextYear}), (${person.id}, 'movie', 'The Dune', 'the dune', ${nextYear})`),
    );
    await capture(person.id, "book", "The Hobbit");
    await capture(person.id, "book", "Hobbit");

    const { output } = await consolidate([person.id]);
    expect(output).toMatchObject({ merged: 1 } satisfies Partial<MergeOutput>);
    // Only tonight's two books were compared (the second with the first).
    expect(output.compared).toBe(1);
    const names = await entityNames(person.id);
    expect(names.filter((n) => !n.startsWith("note:"))).toEqual(["book:The Hobbit", "movie:Dune", "movie:The Dune"]);
  });
});
