// `npm run db:person-indexes`: a vector index of their own for the people whose memories outgrow recall's
// sketch ranking (more than SCOPE_ROWS: db/repositories/recall.ts). Everyone shares one HNSW graph;
// searched for one person it walks past everyone else's rows, and on clustered embeddings it missed
// whole neighbourhoods of a 100k-memory person among a million (recall@20 of an exact name 0.84, p95
// 167 ms in bench:recall). A partial index — the same HNSW over `WHERE user_id = '<person>'` — is a
// graph of that person's rows alone, and the planner takes it for their recall (its statements name
// the person as a constant: custom plans, db/database.ts): 0.96–1.0 and p95 under 30 ms, same data.
//
// Run as the database's owner (DATABASE_URL, as db:setup), from a deploy or a nightly job: it creates
// the index of every person holding more than SCOPE_ROWS memories (CONCURRENTLY: their writes go on)
// and drops that of a person who now holds fewer than half as many, or no longer exists. Idempotent.
// Row-level security binds the owner too (FORCE), so each person's rows are counted as that person.
import postgres from "postgres";
import { PERSON_INDEX_PREFIX as PREFIX, personIndexName, SCOPE_ROWS } from "../db/repositories/recall";
import { runMain, UsageError } from "./cli";

export interface PersonIndexChange {
  userId: string;
  memories: number;
  change: "created" | "dropped";
}

/**
 * Brings the per-person vector indexes in line with the people's sizes: one for each person holding
 * more than `from` memories (archived ones too: they stay in the graph), none for one holding fewer
 * than half that or gone. Returns what it changed.
 */
export async function tunePersonIndexes(sql: postgres.Sql, from = SCOPE_ROWS): Promise<PersonIndexChange[]> {
  const people = await sql<Array<{ id: string }>>`select id from auth.users order by id`;
  const sizes = new Map<string, number>();
  await sql.begin(async (tx) => {
    for (const { id } of people) {
      await tx`select set_config('app.user_id', ${id}, true)`;
      const [row] = await tx<[{ n: number }]>`select count(*)::int as n from public.entities where user_id = ${id}`;
      sizes.set(id, row.n);
    }
  });
  const existing = await sql<Array<{ indexname: string }>>`
    select indexname from pg_indexes where schemaname = 'public' and tablename = 'entities' and indexname like ${`${PREFIX}%`}`;
  const have = new Set(existing.map((r) => r.indexname));
  const changes: PersonIndexChange[] = [];
  for (const [userId, memories] of sizes) {
    const name = personIndexName(userId);
    if (memories > from && !have.has(name)) {
      // The id is a uuid read from auth.users: safe to write into the statement (DDL takes no parameters).
      await sql.unsafe(
        `create index concurrently if not exists ${name} on public.entities using hnsw (embedding vector_cosine_ops) where user_id = '${userId}'::uuid`,
      );
      changes.push({ userId, memories, change: "created" });
    } else if (memories < from / 2 && have.has(name)) {
      await sql.unsafe(`drop index concurrently if exists ${name}`);
      changes.push({ userId, memories, change: "dropped" });
    }
    have.delete(name);
  }
  // Indexes of people who no longer exist (an account deleted since).
  for (const name of have) {
    await sql.unsafe(`drop index concurrently if exists ${name}`);
    changes.push({ userId: name.slice(PREFIX.length), memories: 0, change: "dropped" });
  }
  return changes;
}

runMain(import.meta, async () => {
  const url = process.env.DATABASE_URL;
  if (!url) throw new UsageError("db:person-indexes needs DATABASE_URL (the database owner's, as db:setup).");
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const changes = await tunePersonIndexes(sql);
    for (const c of changes) console.log(`db:person-indexes: ${c.change} the index of ${c.userId} (${c.memories} memories)`);
    console.log(`db:person-indexes: done (${changes.length} changed)`);
  } finally {
    await sql.end({ timeout: 1 });
  }
  return 0;
});
