// `npm run bench:recall`: memory_recall — how exact and how fast — over a shared database of many people
// with skewed sizes: one holding BENCH_BIG memories (100k), one 10k, the rest between 100 and 5,000
// (most near the low end), BENCH_TOTAL in all. On a PostgreSQL server (BENCH_DATABASE_URL) the default is
// a million memories over a thousand people; on the embedded Postgres (PGlite, WASM, one core) 130k over
// twenty, which loads and builds its indexes in minutes rather than hours.
// Embeddings are dense and clustered like bge-m3's (bench/dense-space.ts says how they are made); the
// local embedder's sparse vectors would flatter every index.
//
// For the 100k and the 10k person, BENCH_SAMPLES (300) questions of each kind — free words, an exact
// name, a misspelled name, a type list, a week, a month and a year (each with words or a name), and a
// question about their facts — run as the tool runs them: Database.withUser (the runtime role under
// row-level security, its transactions and settings) and recall (as the tools call it), limit 20. Each time is the
// database's part of a recall (the question's embedding is a model call, not measured here).
// Exactness: for BENCH_EXACT_SAMPLES (100) questions of each kind the same recall runs exhaustively
// (RecallQuery.exhaustive: every row's real distance, every full-text match ranked; the same retrievers
// and fusion) and recall@20 is the share of its 20 answers the fast path also returned.
// Proof: EXPLAIN (ANALYZE, BUFFERS) of one question of each kind goes to bench/results/recall-plans*.md.
//
// The data is loaded once per database (marked in bench_recall_meta; BENCH_LOAD_ONLY=1 stops there);
// later runs measure the same rows, so a change to recall can be measured again in minutes. BENCH_SETUP=owner first takes back what only
// a superuser's setup could apply (db/sql/0400_planner.sql: pgvector's cost, every LEAKPROOF), which is
// where a managed database's owner-only setup leaves recall. Results: bench/results/recall.{md,json} on
// the embedded Postgres, recall-postgres-superuser / recall-postgres-owner on a server.
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { type SQL, sql } from "drizzle-orm";
import postgres from "postgres";
import { Database, type Tx } from "../db/database";
import { createPerson } from "../db/repositories/auth";
import { normalizeName, recall, recallSql, type RecallResult } from "../db/repositories/memory";
import { entityStatements, type IndexLayout, indexLayout, planRecall, type RecallQuery } from "../db/repositories/recall";
import { recallFactsSql } from "../db/repositories/recall-facts";
import { setupDatabase, workerDatabaseUrl } from "../ops/db-setup";
import { startEmbeddedPostgres } from "../ops/embedded-postgres";
import { tunePersonIndexes } from "../ops/person-indexes";
import { mulberry32 } from "../tests/seeded-random";
import { DenseSpace, vectorText } from "./dense-space";
import { markdownTable, percentile, round, serverVersion } from "./support";

const server = process.env.BENCH_DATABASE_URL;
const PEOPLE = Number(process.env.BENCH_PEOPLE ?? (server ? 1000 : 20));
const BIG = Number(process.env.BENCH_BIG ?? 100_000);
const SECOND = 10_000;
const TOTAL = Number(process.env.BENCH_TOTAL ?? (server ? 1_000_000 : 130_000));
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 300);
const EXACT_SAMPLES = Number(process.env.BENCH_EXACT_SAMPLES ?? 100);
const BUILD_MEMORY = server ? "8GB" : "1GB";
const SETUP = process.env.BENCH_SETUP === "owner" ? "owner" : "superuser";
const LIMIT = 20;
const DAY_MS = 86_400_000;

const TYPES = ["book", "movie", "place", "person", "project", "note", "habit", "event"] as const;
const WORDS = 20;
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
const cap = (w: string) => w[0]!.toUpperCase() + w.slice(1);

const NAMES = TYPES.length * WORDS ** 4;
/** Memory i of a person: its type, name and words (8 types × 20⁴ names, each word in one name of 20). */
function memory(i: number) {
  // Scrambled (7,919 is prime to 8 × 20⁴), so that a small person's names differ in every word too.
  const j = (i * 7919 + 13) % NAMES;
  const type = j % TYPES.length;
  const a = Math.floor(j / TYPES.length) % WORDS;
  const b = Math.floor(j / (TYPES.length * WORDS)) % WORDS;
  const c = Math.floor(j / (TYPES.length * WORDS * WORDS)) % WORDS;
  const d = Math.floor(j / (TYPES.length * WORDS ** 3)) % WORDS;
  const name = `The ${cap(A[a]!)} ${cap(B[b]!)} ${C[c]} ${cap(B[d]!)}${i >= NAMES ? ` ${i}` : ""}`;
  // Its meaning: a topic per type and B-word, a subtopic per A-word within it.
  const topic = type * WORDS + b;
  return { type: TYPES[type]!, name, a, b, topic, subtopic: topic * WORDS + a };
}
/** Days before the load that memory i was told (a year) and, for a third, happened (two years). */
const toldDaysAgo = (i: number) => (i * 7) % 365;
const happenedDaysAgo = (i: number) => (i % 3 === 0 ? (i * 11) % 730 : null);
const recallDaysAgo = (i: number) => happenedDaysAgo(i) ?? toldDaysAgo(i);

const VERBS = "cooks|plays|collects|studies|avoids|grows|repairs|paints|visits|trains".split("|");
const NOUNS =
  "tea|chess|stamps|piano|cheese|bonsai|clocks|tulips|kayaks|violins|ceramics|tango|origami|pottery|falconry|sourdough|fencing|yoga|bicycles|marmalade|kites|opera|cacti|sushi|vinyl|karate|sudoku|quilts|pasta|saunas".split(
    "|",
  );
/** Fact i of a person (its topic: the noun; subtopic: the verb). */
function fact(i: number) {
  const verb = i % VERBS.length;
  const noun = Math.floor(i / VERBS.length) % NOUNS.length;
  return {
    statement: `${cap(VERBS[verb]!)} ${NOUNS[noun]} #${i}`,
    noun,
    topic: FACT_TOPIC0 + noun,
    subtopic: (FACT_TOPIC0 + noun) * WORDS + verb,
  };
}
const FACT_TOPIC0 = TYPES.length * WORDS;
const factsOf = (size: number) => Math.min(300, Math.max(10, Math.round(size / 20)));

const space = new DenseSpace(FACT_TOPIC0 + NOUNS.length, WORDS);
/** A person's memory or fact vector: the same for the same person and index on every run. */
const key = (person: number, i: number, salt: number) => (person * 1_000_003 + i) * 4 + salt;

/** People's sizes: the first BIG, the second 10k, the rest 100–5,000 skewed toward 100, summing to about TOTAL. */
function sizes(): number[] {
  const rest = PEOPLE - 2;
  const want = (TOTAL - BIG - SECOND) / rest;
  const draw = (k: number) => Array.from({ length: rest }, (_, j) => Math.round(100 * 50 ** (((j + 0.5) / rest) ** k)));
  // The exponent k for which the mean is `want` (a larger k skews toward 100).
  let lo = 0.2,
    hi = 20;
  for (let step = 0; step < 50; step++) {
    const mid = (lo + hi) / 2;
    const mean = draw(mid).reduce((a, b) => a + b, 0) / rest;
    if (mean > want) lo = mid;
    else hi = mid;
  }
  return [BIG, SECOND, ...draw((lo + hi) / 2)];
}

type Meta = { people: string[]; sizes: number[]; base: string };

async function main() {
  const pg = server ? { url: server, stop: async () => {} } : await startEmbeddedPostgres();
  const worker = { role: "soma_worker", password: "bench-worker-password" };
  await setupDatabase(pg.url, () => {}, { worker });
  // The owner's sessions build indexes (the bulk load's, and db:person-indexes' graphs) with their graph
  // in memory, as an operator would give them (docs/runbook.md): without it the embedded Postgres's
  // five indexes took 1,052 s instead of 221.
  const owner = postgres(pg.url, { max: 2, onnotice: () => {}, connection: { maintenance_work_mem: BUILD_MEMORY } });
  // The embedded Postgres is one session that ignores startup parameters: set it there (for everyone).
  if (!server) await owner`select set_config('maintenance_work_mem', ${BUILD_MEMORY}, false)`;
  const db = new Database(workerDatabaseUrl(pg.url, worker), { max: 2 });
  const meta = await loaded(owner, db);
  if (process.env.BENCH_LOAD_ONLY) return void (await Promise.all([owner.end(), db.close(), pg.stop()]));
  if (SETUP === "owner") await ownerOnly(owner);
  // As an operator runs it: the people holding more than SCOPE_ROWS memories get a vector index of
  // their own (ops/person-indexes.ts); then measured after VACUUM ANALYZE, whatever a migration since
  // the load did to the tables.
  for (const c of await tunePersonIndexes(owner)) console.error(`${c.change} the vector index of a person of ${c.memories}`);
  await owner`vacuum (analyze) entities, facts`;
  const base = new Date(meta.base).getTime();
  const engine = await serverVersion(owner, Boolean(server));

  const rows: Array<Record<string, string | number>> = [];
  const results: unknown[] = [];
  let plans = `# EXPLAIN (ANALYZE, BUFFERS) of one question of each kind, for the ${BIG.toLocaleString("en")}-memory person\n\n${engine}, ${SETUP} setup\n`;
  const kinds = KINDS.filter((k) => !process.env.BENCH_KINDS || process.env.BENCH_KINDS.split(",").includes(k));
  // Warm-up: 30 questions of every kind for both people before any is timed (after VACUUM ANALYZE the
  // first kind timed otherwise paid for reading the person's graph and indexes: p95 92 ms against 21).
  for (const target of [0, 1]) {
    for (const kind of kinds) {
      for (let n = 0; n < 30; n++) await recall(db, meta.people[target]!, question(kind, SAMPLES + n, target, meta.sizes[target]!, base));
    }
  }
  for (const target of [0, 1]) {
    const userId = meta.people[target]!;
    // What recall learns of the setup and the person before their first question, and plans with.
    const layout = await indexLayout(db, userId);
    const size = meta.sizes[target]!;
    for (const kind of kinds) {
      const questions = Array.from({ length: SAMPLES }, (_, n) => question(kind, n, target, size, base));
      const ms: number[] = [];
      const answers: RecallResult[][] = [];
      for (const q of questions) {
        const t0 = performance.now();
        answers.push(await recall(db, userId, q));
        ms.push(performance.now() - t0);
      }
      // BENCH_PROFILE=1: where a recall's time goes — one round trip of the person's settings alone, and
      // each of its two statements alone, sent as recall sends them — p50 / p95 of the same questions.
      const profile: Record<string, string> = {};
      if (process.env.BENCH_PROFILE) {
        const timed = async (statements: (q: RecallQuery) => SQL[]) => {
          const times: number[] = [];
          for (const q of questions) {
            const t0 = performance.now();
            await db.readAsUser(userId, statements(q));
            times.push(performance.now() - t0);
          }
          return `${round(percentile(times, 50), 2)} / ${round(percentile(times, 95), 2)}`;
        };
        profile["settings p50/p95"] = await timed(() => []);
        profile["entities p50/p95"] = await timed((q) => entityStatements(userId, q, layout));
        // The server's own part of it: planning and execution as EXPLAIN (ANALYZE, TIMING OFF) reports
        // them, without the round trip, the parse and the rows' way to this process.
        const server: number[] = [];
        for (const q of questions) server.push(await serverMs(db, userId, entityStatements(userId, q, layout)));
        profile["entities on the server p50/p95"] = `${round(percentile(server, 50), 2)} / ${round(percentile(server, 95), 2)}`;
        if (kind !== "type list") profile["facts p50/p95"] = await timed((q) => [recallFactsSql(userId, q)]);
      }
      // Afterwards, not between them: an exhaustive search reads every embedding of the scope and would
      // leave the caches cold for the next timed question.
      const recalls: number[] = [];
      let short = 0;
      for (const [n, q] of questions.slice(0, EXACT_SAMPLES).entries()) {
        const fast = answers[n]!;
        const exact = await recall(db, userId, { ...q, exhaustive: true });
        const got = new Set(fast.map(idOf));
        recalls.push(exact.length ? exact.filter((r) => got.has(idOf(r))).length / exact.length : 1);
        if (fast.length < exact.length) short++;
      }
      const row = {
        person: size.toLocaleString("en"),
        kind,
        n: ms.length,
        "p50 ms": round(percentile(ms, 50), 2),
        "p95 ms": round(percentile(ms, 95), 2),
        "recall@20": round(recalls.reduce((a, b) => a + b, 0) / recalls.length, 4),
        "worst recall@20": round(Math.min(...recalls), 2),
        "came back short": short,
        ...profile,
      };
      rows.push(row);
      results.push(row);
      console.error(JSON.stringify(row));
      if (target === 0) plans += `\n## ${kind}\n\n${await explain(db, userId, questions[0]!, layout)}\n`;
    }
  }

  const table = markdownTable(
    Object.keys(rows[0]!),
    rows.map((r) => Object.values(r)),
  );
  console.log(table);
  const file = server ? `recall-postgres-${SETUP}` : "recall";
  const people = `${PEOPLE.toLocaleString("en")} people, ${meta.sizes.reduce((a, b) => a + b, 0).toLocaleString("en")} memories (sizes ${BIG.toLocaleString("en")}, ${SECOND.toLocaleString("en")}, then ${Math.min(...meta.sizes)}–${Math.max(...meta.sizes.slice(2))}, median ${percentile(meta.sizes.slice(2), 50)})`;
  const about = {
    date: new Date().toISOString(),
    node: process.version,
    engine,
    setup: SETUP,
    people,
    load: loadavg().map((l) => round(l, 2)),
  };
  writeFileSync(new URL(`./results/${file}.json`, import.meta.url), `${JSON.stringify({ ...about, results }, null, 2)}\n`);
  writeFileSync(
    new URL(`./results/${file}.md`, import.meta.url),
    `# memory_recall: exactness and latency\n\n${engine}, ${SETUP} setup · ${people} · dense 1024-dimension embeddings (bench/dense-space.ts) · ${SAMPLES} questions a kind, ${EXACT_SAMPLES} of them also answered exhaustively · load ${about.load.join(" ")}\n\n${table}\n`,
  );
  writeFileSync(new URL(`./results/${file.replace("recall", "recall-plans")}.md`, import.meta.url), plans);
  await owner.end({ timeout: 1 });
  await db.close();
  await pg.stop();
}

const idOf = (r: RecallResult) => (r.kind === "entity" ? r.entity.id : r.fact.id);

const KINDS = ["free words", "exact name", "misspelled name", "type list", "a week", "a month", "a year", "facts"] as const;
type Kind = (typeof KINDS)[number];

/** Question n of `kind` for person `target` (holding `size` memories), as memory_recall would pass it. */
function question(kind: Kind, n: number, target: number, size: number, base: number): RecallQuery {
  const random = mulberry32(key(target, n, 3) ^ KINDS.indexOf(kind));
  const i = Math.floor(random() * size);
  const m = memory(i);
  const own = space.vector(m.topic, m.subtopic, key(target, i, 0));
  const days = (d: number) => new Date(base - d * DAY_MS);
  // Words naming a subtopic ("silent harbor"), and a vector made the way a text of that subtopic is.
  const words = () => ({ query: `${A[m.a]} ${B[m.b]}`, embedding: Array.from(space.vector(m.topic, m.subtopic, key(target, n, 2))) });
  const named = (noise: number) => ({ query: m.name, embedding: Array.from(space.near(own, key(target, n, 2), noise)) });
  const around = (d: number, width: number) => ({ since: days(d + width / 2), before: days(Math.max(0, d - width / 2)) });
  switch (kind) {
    case "free words":
      return { ...words(), limit: LIMIT };
    case "exact name":
      return { ...named(0.6), limit: LIMIT };
    case "misspelled name":
      return { ...named(0.7), query: m.name.replace(/([aeiou])/, "$1$1"), limit: LIMIT };
    case "type list":
      return {
        query: `which ${m.type}s did I save?`,
        type: m.type,
        embedding: Array.from(space.vector(m.topic, m.subtopic, key(target, n, 2), 1.2)),
        limit: LIMIT,
      };
    case "a week":
      return {
        query: "what did I do that week?",
        embedding: Array.from(space.vague(key(target, n, 2))),
        limit: LIMIT,
        ...around(recallDaysAgo(i), 7),
      };
    case "a month":
      return { ...words(), limit: LIMIT, ...around(recallDaysAgo(i), 30) };
    case "a year":
      return { ...named(0.6), limit: LIMIT, ...around(recallDaysAgo(i), 365) };
    case "facts": {
      const f = fact(Math.floor(random() * factsOf(size)));
      return {
        query: `what about ${NOUNS[f.noun]}?`,
        embedding: Array.from(space.vector(f.topic, f.subtopic, key(target, n, 2))),
        limit: LIMIT,
      };
    }
  }
}

/** EXPLAIN (ANALYZE, BUFFERS) of the statements recall runs for `q`, planned as it plans them. */
async function explain(db: Database, userId: string, q: RecallQuery, layout: IndexLayout): Promise<string> {
  const statements = [
    ["entities", recallSql(userId, q, layout)] as const,
    ...(q.type ? [] : [["facts", recallFactsSql(userId, q)] as const]),
  ];
  let out = `question: ${JSON.stringify({ query: q.query, type: q.type, since: q.since, before: q.before })}\n`;
  for (const [name, statement] of statements) {
    const lines = await db.withUser(userId, async (tx: Tx) => {
      // Planned as recall plans them (db/repositories/recall.ts).
      await planRecall(tx, q);
      return (await tx.execute(sql`explain (analyze, buffers) ${statement}`)) as unknown as Array<{ "QUERY PLAN": string }>;
    });
    out += `\n### ${name}\n\n\`\`\`\n${lines.map((l) => l["QUERY PLAN"]).join("\n")}\n\`\`\`\n`;
  }
  return out;
}

/** Planning plus execution of `statements`' last one on the server, sent as recall sends it (ms). */
async function serverMs(db: Database, userId: string, statements: SQL[]): Promise<number> {
  const last = statements.at(-1)!;
  const [row] = await db.readAsUser<{ "QUERY PLAN": Array<{ "Planning Time": number; "Execution Time": number }> }>(userId, [
    ...statements.slice(0, -1),
    sql`explain (analyze, timing off, summary, format json) ${last}`,
  ]);
  const plan = row!["QUERY PLAN"][0]!;
  return plan["Planning Time"] + plan["Execution Time"];
}

/** The bench's people, loaded now unless this database already holds them. */
async function loaded(owner: postgres.Sql, db: Database): Promise<Meta> {
  await owner`create table if not exists bench_recall_meta (meta jsonb not null)`;
  const [kept] = await owner<[{ meta: Meta }?]>`select meta from bench_recall_meta`;
  const want = sizes();
  if (kept && JSON.stringify(kept.meta.sizes) === JSON.stringify(want)) return kept.meta;
  if (kept) throw new Error("this database holds another bench's people: give the bench an empty database");
  const started = Date.now();
  const people: string[] = [];
  for (const [p] of want.entries()) people.push((await createPerson(db, { displayName: `bench-${p}` })).id);
  // Bulk load the way an operator would: the vector, name and word indexes dropped, then built once.
  const indexes = await owner<Array<{ indexname: string; indexdef: string }>>`
    select indexname, indexdef from pg_indexes
    where tablename in ('entities', 'facts') and (indexdef like '%USING hnsw%' or indexdef like '%USING gin%')`;
  for (const { indexname } of indexes) await owner.unsafe(`drop index ${indexname}`);
  const base = new Date();
  // Two loaders at once (the server parses vectors while the next batch is made).
  let next = 0;
  const loader = async () => {
    for (let p = next++; p < people.length; p = next++) await loadPerson(owner, people[p]!, p, want[p]!, base);
  };
  await Promise.all([loader(), loader()]);
  console.error(`loaded ${want.reduce((a, b) => a + b, 0)} memories in ${Math.round((Date.now() - started) / 1000)} s`);
  const building = Date.now();
  for (const { indexdef } of indexes) await owner.unsafe(indexdef);
  console.error(`built ${indexes.length} indexes in ${Math.round((Date.now() - building) / 1000)} s`);
  await owner`vacuum analyze entities`;
  await owner`vacuum analyze facts`;
  const meta = { people, sizes: want, base: base.toISOString() };
  await owner`insert into bench_recall_meta ${owner({ meta: owner.json(meta) })}`;
  return meta;
}

async function loadPerson(owner: postgres.Sql, userId: string, person: number, size: number, base: Date) {
  const at = (days: number | null) =>
    days === null ? null : new Date(base.getTime() - days * DAY_MS - (person % 24) * 3_600_000).toISOString();
  for (let from = 0; from < size; from += 1000) {
    const n = Math.min(1000, size - from);
    const cols = {
      type: [] as string[],
      name: [] as string[],
      key: [] as string[],
      vec: [] as string[],
      told: [] as string[],
      happened: [] as Array<string | null>,
    };
    for (let i = from; i < from + n; i++) {
      const m = memory(i);
      cols.type.push(m.type);
      cols.name.push(m.name);
      cols.key.push(normalizeName(m.name));
      cols.vec.push(vectorText(space.vector(m.topic, m.subtopic, key(person, i, 0))));
      cols.told.push(at(toldDaysAgo(i))!);
      cols.happened.push(at(happenedDaysAgo(i)));
    }
    await owner`insert into entities (user_id, type, name, normalized_name, embedding, told_at, happened_at, updated_at)
      select ${userId}, t, n, k, v::vector, told::timestamptz, h::timestamptz, told::timestamptz
      from unnest(${cols.type}::text[], ${cols.name}::text[], ${cols.key}::text[], ${cols.vec}::text[], ${cols.told}::text[], ${cols.happened}::text[])
        as u(t, n, k, v, told, h)`;
  }
  const facts = Array.from({ length: factsOf(size) }, (_, i) => fact(i));
  await owner`insert into facts (user_id, statement, category, subject, confidence, embedding, told_at)
    select ${userId}, s, 'preference', split_part(s, ' ', 2), 0.5 + (o % 5) / 10.0, v::vector, ${at(0)}::timestamptz - o * interval '1 day'
    from unnest(${facts.map((f) => f.statement)}::text[], ${facts.map((f, i) => vectorText(space.vector(f.topic, f.subtopic, key(person, i, 1))))}::text[])
      with ordinality as u(s, v, o)`;
}

/** Takes back what only a superuser's setup applies (db/sql/0400_planner.sql): the owner-only setup. */
async function ownerOnly(owner: postgres.Sql) {
  await owner.unsafe(`alter function cosine_distance(vector, vector) cost 1;
    alter function similarity_op(text, text) not leakproof;
    alter function word_similarity_op(text, text) not leakproof;
    alter function ts_match_vq(tsvector, tsquery) not leakproof`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
