// `npm run bench:recall`: memory_recall latency on the embedded Postgres (PGlite + pgvector) with one
// person holding 1k, 10k and 100k entities among 10 people (the other nine hold 1k each). Each scale
// runs ≥ 200 recalls of mixed kinds — typed lists, exact names, prefixes, misspellings, partial-word
// queries — through the same path as the tool: local embedding + Database.withUser + recallEntities.
// The path is the tool's: recallMemory, entities and the person's current facts (the target holds
// FACTS of them). A third of the entities carry a happened_at, all a told_at spread over a year, and
// four kinds of question are bounded in time like memory_recall's since/until (issue 13): a typed list
// of one month, an exact name inside a two-day window, a week with no type and no useful words, and an
// exact name inside a year around it (entities_user_recall_at_idx, migrations 0008, 0010 and 0011). A
// window's rows are ranked by their in-row sketches first; a year at 100k holds far more than the
// sketch pass reads (WINDOW_ROWS), so it also takes the HNSW path.
// "found" is the named entity among the ten results. A prefix ("The Silent Harbor") and partial words
// ("Harbor Atlas") name hundreds of entities at 100k (the generator has 20 words a slot), so for them
// it is a measure of ambiguity, not of recall.
// Two designs of the name and full-text GIN indexes are measured on the same data (BENCH_DESIGNS):
//   global      (search_name gin_trgm_ops), (search): a scan returns every person's matches and
//               the policy drops the others' rows after reading them
//   per-person  (user_id, search_name gin_trgm_ops), (user_id, search) with btree_gin: the scan
//               itself is limited to the person (migrations 0006, 0008)
// For each: p50/p95 per scale and kind, "found" (the entity asked for among the results; typed lists:
// any result) and how many heap rows the statement read and then dropped (EXPLAIN ANALYZE: rows a
// filter or recheck removed; a GIN scan's walk over other people's index entries is not counted). Writes bench/results/recall.json and .md.
// BENCH_DATABASE_URL runs it against a PostgreSQL server of your own instead (with vector, pg_trgm,
// uuid-ossp and btree_gin available; as a superuser or the database's owner): give it an empty
// database — the bench runs db:setup there, loads its people and drops and rebuilds the entities
// indexes. Those results go to bench/results/recall-postgres-superuser (or -owner).json and .md.
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { localEmbedder } from "../agents/integrations/model/embeddings";
import { Database } from "../db/database";
import { createPerson } from "../db/repositories/auth";
import { recordFact } from "../db/repositories/facts";
import { normalizeName, recallEntities, recallMemory, recallSql } from "../db/repositories/memory";
import { recallFacts } from "../db/repositories/recall";
import { setupDatabase, workerDatabaseUrl } from "../ops/db-setup";
import { startEmbeddedPostgres } from "../ops/embedded-postgres";
import { percentile, round } from "./support";

const SCALES = (process.env.BENCH_SCALES ?? "1000,10000,100000").split(",").map(Number);
const OTHER_PEOPLE = 9;
const OTHERS_EACH = 1000;
const QUERIES_PER_SCALE = Number(process.env.BENCH_QUERIES ?? 320);
/** Current facts the target person holds (searched by every untyped recall). */
const FACTS = 300;
const DAY_MS = 86_400_000;
const DESIGNS = {
  global: [
    "create index entities_name_trgm on entities using gin (search_name gin_trgm_ops) with (fastupdate = off)",
    "create index entities_search_gin on entities using gin (search) with (fastupdate = off)",
  ],
  "per-person": [
    "create index entities_user_name_trgm on entities using gin (user_id, search_name gin_trgm_ops) with (fastupdate = off)",
    "create index entities_user_search_gin on entities using gin (user_id, search) with (fastupdate = off)",
  ],
} as const;
type Design = keyof typeof DESIGNS;
const DESIGN_NAMES = (process.env.BENCH_DESIGNS ?? "global,per-person").split(",") as Design[];
const INDEX_NAMES = ["entities_name_trgm", "entities_search_gin", "entities_user_name_trgm", "entities_user_search_gin"];
const TYPES = ["book", "movie", "place", "person", "project", "note", "habit", "event"] as const;

const A =
  "silent golden hidden broken distant crimson quiet northern endless wandering frozen burning hollow ancient electric gentle bitter secret final lost".split(
    " ",
  );
const B =
  "harbor garden empire river mirror archive lantern forest machine orchard signal meadow citadel compass ember canyon tide glacier atlas engine".split(
    " ",
  );
const C =
  "of dreams|of salt|of glass|at dawn|in winter|beyond the hills|of the north|under stars|of iron|in bloom|of echoes|at midnight|of paper|in exile|of thunder|of silk|of ashes|on fire|of summer|of kings".split(
    "|",
  );

/** A distinct, plausible name for index i (20 × 20 × 20 × 20 = 160k combinations). */
function nameFor(i: number): string {
  const a = A[i % 20]!,
    b = B[Math.floor(i / 20) % 20]!,
    c = C[Math.floor(i / 400) % 20]!,
    d = B[Math.floor(i / 8000) % 20]!;
  return `The ${cap(a)} ${cap(b)} ${c} ${cap(d)}`;
}
const cap = (w: string) => w[0]!.toUpperCase() + w.slice(1);
/** When the last load finished: the time-bounded questions count back from it. */
let loadedAt = Date.now();

async function load(db: Database, userId: string, from: number, to: number) {
  const batch = 500;
  for (let start = from; start < to; start += batch) {
    const names = Array.from({ length: Math.min(batch, to - start) }, (_, k) => start + k);
    const vectors = await localEmbedder.embed(names.map((i) => `${TYPES[i % TYPES.length]}: ${nameFor(i)}`));
    const values = names.map(
      (i, k) =>
        sql`(${userId}, ${TYPES[i % TYPES.length]}, ${nameFor(i)}, ${normalizeName(nameFor(i))}, ${`[${vectors[k]!.join(",")}]`}::vector,
             now() - (${i % 365} * interval '1 day'), now() - (${i % 365} * interval '1 day'), ${happenedDaysAgo(i) === null ? null : sql`now() - (${happenedDaysAgo(i)} * interval '1 day')`})`,
    );
    await db.withUser(userId, (tx) =>
      tx.execute(
        sql`insert into entities (user_id, type, name, normalized_name, embedding, updated_at, told_at, happened_at) values ${sql.join(values, sql`, `)} on conflict do nothing`,
      ),
    );
  }
}

/** Days before the load that entity i happened, for a third of them (the rest only have told_at). */
function happenedDaysAgo(i: number): number | null {
  return i % 3 === 0 ? i % 730 : null;
}
/** Days ago entity i counts as being from: happened if known, else told. */
const whenDaysAgo = (i: number) => happenedDaysAgo(i) ?? i % 365;

const KINDS = [
  "typed list",
  "exact name",
  "prefix",
  "misspelling",
  "partial words",
  "typed list, one month",
  "exact name, two days",
  "one week, no type",
  "exact name, one year",
] as const;
type Kind = (typeof KINDS)[number];

type Query = { kind: Kind; query: string; type?: string; limit: number; expected: string; since?: Date; before?: Date };

function queries(size: number): Query[] {
  const out: Query[] = [];
  for (let q = 0; q < QUERIES_PER_SCALE; q++) {
    const i = (q * 7919) % size;
    const expected = nameFor(i);
    const kind = KINDS[q % KINDS.length]!;
    const daysAgo = (days: number) => new Date(loadedAt - days * DAY_MS);
    if (kind === "typed list")
      out.push({ kind, query: `which ${TYPES[q % TYPES.length]}s did I save?`, type: TYPES[q % TYPES.length], limit: 50, expected });
    if (kind === "exact name") out.push({ kind, query: expected, limit: 10, expected });
    if (kind === "prefix") out.push({ kind, query: expected.split(" ").slice(0, 3).join(" "), limit: 10, expected });
    if (kind === "misspelling") out.push({ kind, query: expected.replace(/([aeiou])/, "$1$1"), limit: 10, expected });
    if (kind === "partial words") out.push({ kind, query: `${expected.split(" ")[2]} ${expected.split(" ").at(-1)}`, limit: 10, expected });
    if (kind === "typed list, one month")
      out.push({
        kind,
        query: `which ${TYPES[q % TYPES.length]}s last month?`,
        type: TYPES[q % TYPES.length],
        limit: 50,
        expected,
        since: daysAgo(60),
        before: daysAgo(30),
      });
    if (kind === "exact name, two days")
      out.push({ kind, query: expected, limit: 10, expected, since: daysAgo(whenDaysAgo(i) + 1), before: daysAgo(whenDaysAgo(i) - 1) });
    if (kind === "one week, no type")
      out.push({ kind, query: "what did I do?", limit: 10, expected, since: daysAgo(7), before: daysAgo(0) });
    if (kind === "exact name, one year")
      out.push({
        kind,
        query: expected,
        limit: 10,
        expected,
        since: daysAgo(whenDaysAgo(i) + 180),
        before: daysAgo(Math.max(0, whenDaysAgo(i) - 180)),
      });
  }
  return out;
}

/** The server named by BENCH_DATABASE_URL, else a fresh embedded Postgres. */
async function startServer(): Promise<{ url: string; stop(): Promise<void> }> {
  const url = process.env.BENCH_DATABASE_URL;
  return url ? { url, stop: async () => {} } : startEmbeddedPostgres();
}

async function main() {
  const pg = await startServer();
  const external = Boolean(process.env.BENCH_DATABASE_URL);
  // Recall runs as the Worker does: its login role, SET LOCAL ROLE soma_app, row-level security.
  const worker = { role: "soma_worker", password: "bench-worker-password" };
  await setupDatabase(pg.url, () => {}, { worker });
  const db = new Database(workerDatabaseUrl(pg.url, worker), { max: 4 });
  const target = await createPerson(db, { displayName: "bench-target" });
  // Their own words, none shared with the entities' names: a fact never answers a name query by accident.
  const VERBS = "cooks|plays|collects|studies|avoids|grows|repairs|paints|visits|trains".split("|");
  const NOUNS =
    "tea|chess|stamps|piano|cheese|bonsai|clocks|tulips|kayaks|violins|ceramics|tango|origami|pottery|falconry|sourdough|fencing|yoga|bicycles|marmalade|kites|opera|cacti|sushi|vinyl|karate|sudoku|quilts|pasta|saunas".split(
      "|",
    );
  const statements = Array.from({ length: FACTS }, (_, i) => `${cap(VERBS[i % 10]!)} ${NOUNS[Math.floor(i / 10) % 30]} #${i}`);
  const factVectors = await localEmbedder.embed(statements);
  await db.withUser(target.id, async (tx) => {
    for (const [i, statement] of statements.entries()) {
      await recordFact(tx, target.id, {
        statement,
        category: "preference",
        subject: `likes: ${i}`,
        confidence: 0.5 + (i % 5) / 10,
        embedding: factVectors[i]!,
        sourceId: null,
      });
    }
  });
  for (let p = 0; p < OTHER_PEOPLE; p++) {
    const other = await createPerson(db, { displayName: `bench-other-${p}` });
    await load(db, other.id, 0, OTHERS_EACH);
  }

  const results: Array<{
    design: Design;
    scale: number;
    kind: string;
    n: number;
    p50: number;
    p95: number;
    found: number;
    othersRead: number;
  }> = [];
  let loaded = 0;
  const owner = postgres(pg.url, { max: 1, onnotice: () => {} });
  for (const scale of SCALES) {
    const started = Date.now();
    // Bulk load the way an operator would: without the HNSW index, then build it once.
    await owner`drop index if exists entities_embedding_hnsw`;
    await load(db, target.id, loaded, scale);
    await owner.unsafe(
      "set maintenance_work_mem = '1GB'; create index entities_embedding_hnsw on entities using hnsw (embedding vector_cosine_ops); analyze entities",
    );
    loaded = scale;
    console.error(`loaded ${scale} entities for the target person in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    loadedAt = Date.now();
    const all = queries(scale);
    for (const design of DESIGN_NAMES) {
      await owner.unsafe(INDEX_NAMES.map((name) => `drop index if exists ${name}`).join("; "));
      await owner.unsafe(`set maintenance_work_mem = '1GB'; ${DESIGNS[design].join("; ")}; analyze entities`);
      for (const q of all.slice(0, 10)) await run(q); // warm-up
      const timings = new Map<string, { ms: number[]; found: number; othersRead: number[] }>();
      for (const [n, q] of all.entries()) {
        const t0 = performance.now();
        const names = await run(q);
        const ms = performance.now() - t0;
        const found = q.kind.startsWith("typed list") || q.kind === "one week, no type" ? names.length > 0 : names.includes(q.expected);
        // Every fifth query again under EXPLAIN ANALYZE: heap rows read and then dropped.
        const othersRead = n % 5 === 0 ? await rowsDropped(q) : undefined;
        for (const key of [q.kind, "all"]) {
          const entry = timings.get(key) ?? { ms: [], found: 0, othersRead: [] };
          entry.ms.push(ms);
          if (found) entry.found++;
          if (othersRead !== undefined) entry.othersRead.push(othersRead);
          timings.set(key, entry);
        }
      }
      for (const [kind, { ms, found, othersRead }] of timings) {
        const meanOthers = othersRead.length ? othersRead.reduce((a, b) => a + b, 0) / othersRead.length : 0;
        results.push({
          design,
          scale,
          kind,
          n: ms.length,
          p50: round(percentile(ms, 50), 2),
          p95: round(percentile(ms, 95), 2),
          found: round(found / ms.length, 3),
          othersRead: round(meanOthers, 1),
        });
      }
      console.error(`measured ${design} at ${scale}`);
    }
  }

  /** Rows the recall statement's scans of entities read and then removed (policy filter or recheck). */
  async function rowsDropped(q: Query): Promise<number> {
    const [embedding] = await localEmbedder.embed([q.query]);
    const statement = recallSql(target.id, { ...recallQuery(q), embedding: embedding! });
    // As recallMemory plans it (sorting discouraged: db/repositories/recall.ts, withRecallPlans).
    const explain = (format: string) =>
      db.withUser(target.id, async (tx) => {
        await tx.execute(sql`select set_config('enable_sort', 'off', true)`);
        return tx.execute(sql`explain (analyze, ${sql.raw(format)}) ${statement}`);
      });
    // BENCH_PLAN=<kind>: the text plan of each question of that kind, on stderr.
    if (process.env.BENCH_PLAN === q.kind) {
      const text = (await explain("format text")) as unknown as Array<{ "QUERY PLAN": string }>;
      console.error(text.map((r) => r["QUERY PLAN"]).join("\n"));
      const query = { ...recallQuery(q), embedding: embedding! };
      for (const [part, work] of [
        ["entities (sorting not discouraged)", (tx: Parameters<typeof recallEntities>[0]) => recallEntities(tx, target.id, query)],
        ["facts", (tx: Parameters<typeof recallEntities>[0]) => recallFacts(tx, target.id, query)],
        ["both", (tx: Parameters<typeof recallEntities>[0]) => recallMemory(tx, target.id, query)],
      ] as const) {
        const t0 = performance.now();
        await db.withUser(target.id, work);
        console.error(`${q.kind}: ${part} ${round(performance.now() - t0, 2)} ms`);
      }
    }
    const rows = (await explain("format json")) as unknown as Array<{
      "QUERY PLAN": unknown;
    }>;
    let dropped = 0;
    const visit = (node: Record<string, unknown>) => {
      if (node["Relation Name"] === "entities")
        dropped += Number(node["Rows Removed by Filter"] ?? 0) + Number(node["Rows Removed by Index Recheck"] ?? 0);
      for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? []) visit(child);
    };
    const plan = rows[0]!["QUERY PLAN"];
    visit(((typeof plan === "string" ? JSON.parse(plan) : plan) as Array<{ Plan: Record<string, unknown> }>)[0]!.Plan);
    return dropped;
  }

  function recallQuery(q: Query) {
    return {
      query: q.query,
      limit: q.limit,
      ...(q.type ? { type: q.type } : {}),
      ...(q.since ? { since: q.since } : {}),
      ...(q.before ? { before: q.before } : {}),
    };
  }

  async function run(q: Query) {
    const [embedding] = await localEmbedder.embed([q.query]);
    const rows = await db.withUser(target.id, (tx) => recallMemory(tx, target.id, { ...recallQuery(q), embedding: embedding! }));
    return rows.map((r) => (r.kind === "entity" ? r.entity.name : r.fact.statement));
  }

  const lines = [
    "| GIN design | entities (target person) | query kind | n | p50 ms | p95 ms | found | rows read then dropped |",
    "|---|---:|---|---:|---:|---:|---:|---:|",
    ...results.map(
      (r) =>
        `| ${r.design} | ${r.scale.toLocaleString("en")} | ${r.kind} | ${r.n} | ${r.p50} | ${r.p95} | ${(r.found * 100).toFixed(1)}% | ${r.othersRead} |`,
    ),
  ];
  const table = lines.join("\n");
  console.log(table);
  const server = external ? await serverVersion(owner) : null;
  const engine = server?.engine ?? "PGlite 0.5 (Postgres 17, WASM) + pgvector, over the wire protocol";
  const meta = {
    date: new Date().toISOString(),
    node: process.version,
    others: `${OTHER_PEOPLE} people × ${OTHERS_EACH}`,
    facts: FACTS,
    engine,
    load: loadavg().map((l) => round(l, 2)),
  };
  const file = server ? `recall-postgres-${server.superuser ? "superuser" : "owner"}` : "recall";
  writeFileSync(new URL(`./results/${file}.json`, import.meta.url), `${JSON.stringify({ ...meta, results }, null, 2)}\n`);
  writeFileSync(new URL(`./results/${file}.md`, import.meta.url), `# memory_recall latency\n\n${JSON.stringify(meta)}\n\n${table}\n`);
  await owner.end({ timeout: 1 });
  await db.close();
  await pg.stop();
}

/** The server's version, pgvector's and whether the setup role is a superuser (0400_planner.sql's tuning needs one). */
async function serverVersion(owner: postgres.Sql): Promise<{ engine: string; superuser: boolean }> {
  const [row] = await owner<[{ version: string; vector: string; superuser: boolean }]>`
    select version(), (select extversion from pg_extension where extname = 'vector') as vector,
           (select rolsuper from pg_roles where rolname = current_user) as superuser`;
  return {
    engine: `${row.version} + pgvector ${row.vector}, setup role ${row.superuser ? "a superuser" : "the database's owner, not a superuser"}`,
    superuser: row.superuser,
  };
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
