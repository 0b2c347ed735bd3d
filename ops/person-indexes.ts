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
// and drops that of a person who now holds fewer than half as many, or no longer exists; a graph built
// with an older release's options is rebuilt beside the old one and swapped in. Idempotent.
// Row-level security binds the owner too (FORCE), so each person's rows are counted as that person.
import postgres from "postgres";
import { PERSON_INDEX_PREFIX as PREFIX, personIndexName, SCOPE_ROWS } from "../db/repositories/recall";
import { runMain, UsageError } from "./cli";

export interface PersonIndexChange {
  userId: string;
  memories: number;
  change: "created" | "rebuilt" | "dropped";
}

/**
 * How a person's graph is built: each row linked while searching 200 candidates wide instead of
 * pgvector's default 64. On clustered embeddings the default graph left whole neighbourhoods out of
 * reach of a search 100 wide: an exact name's recall@20 at 100k memories was 0.935 (worst 0.05), a
 * year's 0.96; built this way, 1.0 for both at the same search width and speed (bench:recall). The
 * build takes longer (1 min 50 s for 100k on PostgreSQL 15, with the graph in maintenance_work_mem).
 */
export const PERSON_GRAPH_OPTIONS = ["ef_construction=200"];
/** The name a graph is rebuilt under, swapped in for the old one once it is valid. */
const NEXT = "_next";
const nextName = (name: string) => `${name}${NEXT}`;

/**
 * How many graphs make the run warn. Each graph is a partial index of `entities`, whose predicate the
 * planner checks in every scan of `entities` of every statement, whoever it is for: measured on
 * PostgreSQL 15 at a million memories, 0.4–1.4 ms more planning of each recall statement per hundred
 * graphs, linear (README, issue 28's ninth round). Past this many, partitions of `entities` are due.
 */
export const GRAPHS_WARNING = 100;

/** The run's warning when more than `above` person graphs slow everyone's planning, else null. */
export function graphsWarning(graphs: number, above = GRAPHS_WARNING): string | null {
  if (graphs <= above) return null;
  return `${graphs} people have a vector graph of their own, and every recall statement's planning checks each one (0.4–1.4 ms per hundred graphs): partitioning entities by person is due (docs/runbook.md).`;
}

/** The number of person graphs on `entities` (one being rebuilt beside its old one not counted twice). */
export async function personGraphCount(sql: postgres.Sql): Promise<number> {
  const [row] = await sql<[{ n: number }]>`select count(*)::int as n from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind = 'i' and c.relname like ${`${PREFIX}%`} and c.relname not like ${`%${NEXT}`}`;
  return row.n;
}

interface Existing {
  name: string;
  valid: boolean;
  current: boolean;
}

/**
 * Brings the per-person vector indexes in line with the people's sizes: one for each person holding
 * more than `from` memories (archived ones too: they stay in the graph), none for one holding fewer
 * than half that or gone. A graph built with other options (an older release's) or left invalid by an
 * interrupted build is rebuilt beside it and swapped in: the person's recall keeps a graph meanwhile.
 * Returns what it changed.
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
  const rows = await sql<Array<{ name: string; valid: boolean; options: string[] | null }>>`
    select c.relname as name, i.indisvalid as valid, c.reloptions as options
    from pg_class c join pg_index i on i.indexrelid = c.oid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relname like ${`${PREFIX}%`}`;
  const have = new Map<string, Existing>(
    rows.map((r) => [r.name, { name: r.name, valid: r.valid, current: PERSON_GRAPH_OPTIONS.every((o) => r.options?.includes(o)) }]),
  );
  const drop = (name: string) => sql.unsafe(`drop index concurrently if exists ${name}`);
  // The id is a uuid read from auth.users: safe to write into the statement (DDL takes no parameters).
  const build = (name: string, userId: string) =>
    sql.unsafe(
      `create index concurrently ${name} on public.entities using hnsw (embedding vector_cosine_ops)
       with (${PERSON_GRAPH_OPTIONS.join(", ")}) where user_id = '${userId}'::uuid`,
    );
  const changes: PersonIndexChange[] = [];
  for (const [userId, memories] of sizes) {
    const name = personIndexName(userId);
    const index = have.get(name);
    const next = have.get(nextName(name));
    have.delete(name);
    have.delete(nextName(name));
    if (memories > from) {
      if (index?.valid && index.current) {
        if (next) await drop(next.name);
        continue;
      }
      if (!index && next?.valid && next.current) {
        // A swap interrupted after the old graph went: the new one only needs its name.
        await sql.unsafe(`alter index ${next.name} rename to ${name}`);
        changes.push({ userId, memories, change: "created" });
        continue;
      }
      if (next) await drop(next.name);
      if (!index) {
        await build(name, userId);
        changes.push({ userId, memories, change: "created" });
        continue;
      }
      await build(nextName(name), userId);
      await drop(name);
      await sql.unsafe(`alter index ${nextName(name)} rename to ${name}`);
      changes.push({ userId, memories, change: "rebuilt" });
    } else {
      if (next) await drop(next.name);
      // Fewer than half the threshold, or a build that never finished (between the two: kept as it is).
      if (index && (memories < from / 2 || !index.valid)) {
        await drop(name);
        changes.push({ userId, memories, change: "dropped" });
      }
    }
  }
  // Indexes of people who no longer exist (an account deleted since).
  for (const { name } of have.values()) {
    await drop(name);
    if (!name.endsWith(NEXT)) changes.push({ userId: name.slice(PREFIX.length), memories: 0, change: "dropped" });
  }
  return changes;
}

/**
 * One run of `npm run db:person-indexes`: the graphs tuned (people past `from` memories), each change
 * and, past `warnAbove` graphs, the warning told to `log`. Returns the changes.
 */
export async function runPersonIndexes(
  sql: postgres.Sql,
  log: (line: string) => void,
  { from = SCOPE_ROWS, warnAbove = GRAPHS_WARNING } = {},
): Promise<PersonIndexChange[]> {
  const changes = await tunePersonIndexes(sql, from);
  for (const c of changes) log(`db:person-indexes: ${c.change} the index of ${c.userId} (${c.memories} memories)`);
  const warning = graphsWarning(await personGraphCount(sql), warnAbove);
  if (warning) log(`db:person-indexes: warning: ${warning}`);
  log(`db:person-indexes: done (${changes.length} changed)`);
  return changes;
}

runMain(import.meta, async () => {
  const url = process.env.DATABASE_URL;
  if (!url) throw new UsageError("db:person-indexes needs DATABASE_URL (the database owner's, as db:setup).");
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await runPersonIndexes(sql, (line) => console.log(line));
  } finally {
    await sql.end({ timeout: 1 });
  }
  return 0;
});
