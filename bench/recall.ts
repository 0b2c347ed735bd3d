// `npm run bench:recall`: memory_recall latency on the embedded Postgres (PGlite + pgvector) with one
// person holding 1k, 10k and 100k entities among 10 people (the other nine hold 1k each). Each scale
// runs ≥ 200 recalls of mixed kinds — typed lists, exact names, prefixes, misspellings, partial-word
// queries — through the same path as the tool: local embedding + Database.withUser + recallEntities.
// Prints p50/p95 per scale and kind, writes bench/results/recall.json and .md.
import { writeFileSync } from "node:fs";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { localEmbedder } from "../agents/model/embeddings";
import { Database } from "../db/database";
import { createPerson } from "../db/repositories/auth";
import { normalizeName, recallEntities } from "../db/repositories/memory";
import { setupDatabase } from "../ops/db-setup";
import { startEmbeddedPostgres } from "../ops/embedded-postgres";
import { percentile, round } from "./support";

const SCALES = (process.env.BENCH_SCALES ?? "1000,10000,100000").split(",").map(Number);
const OTHER_PEOPLE = 9;
const OTHERS_EACH = 1000;
const QUERIES_PER_SCALE = Number(process.env.BENCH_QUERIES ?? 240);
const TYPES = ["book", "movie", "place", "person", "project", "note", "habit", "event"] as const;

const A = "silent golden hidden broken distant crimson quiet northern endless wandering frozen burning hollow ancient electric gentle bitter secret final lost".split(" ");
const B = "harbor garden empire river mirror archive lantern forest machine orchard signal meadow citadel compass ember canyon tide glacier atlas engine".split(" ");
const C = "of dreams|of salt|of glass|at dawn|in winter|beyond the hills|of the north|under stars|of iron|in bloom|of echoes|at midnight|of paper|in exile|of thunder|of silk|of ashes|on fire|of summer|of kings".split("|");

/** A distinct, plausible name for index i (20 × 20 × 20 × 20 = 160k combinations). */
function nameFor(i: number): string {
  const a = A[i % 20]!, b = B[Math.floor(i / 20) % 20]!, c = C[Math.floor(i / 400) % 20]!, d = B[Math.floor(i / 8000) % 20]!;
  return `The ${cap(a)} ${cap(b)} ${c} ${cap(d)}`;
}
const cap = (w: string) => w[0]!.toUpperCase() + w.slice(1);

async function load(db: Database, userId: string, from: number, to: number) {
  const batch = 500;
  for (let start = from; start < to; start += batch) {
    const names = Array.from({ length: Math.min(batch, to - start) }, (_, k) => start + k);
    const vectors = await localEmbedder.embed(names.map((i) => `${TYPES[i % TYPES.length]}: ${nameFor(i)}`));
    const values = names.map((i, k) => sql`(${userId}, ${TYPES[i % TYPES.length]}, ${nameFor(i)}, ${normalizeName(nameFor(i))}, ${`[${vectors[k]!.join(",")}]`}::vector, now() - (${i % 365} * interval '1 day'))`);
    await db.withUser(userId, (tx) =>
      tx.execute(sql`insert into entities (user_id, type, name, normalized_name, embedding, updated_at) values ${sql.join(values, sql`, `)} on conflict do nothing`),
    );
  }
}

type Kind = "typed list" | "exact name" | "prefix" | "misspelling" | "partial words";

function queries(size: number): Array<{ kind: Kind; query: string; type?: string; limit: number }> {
  const out: Array<{ kind: Kind; query: string; type?: string; limit: number }> = [];
  for (let q = 0; q < QUERIES_PER_SCALE; q++) {
    const i = (q * 7919) % size;
    const name = nameFor(i);
    const kind = (["typed list", "exact name", "prefix", "misspelling", "partial words"] as const)[q % 5]!;
    if (kind === "typed list") out.push({ kind, query: `which ${TYPES[q % TYPES.length]}s did I save?`, type: TYPES[q % TYPES.length], limit: 50 });
    if (kind === "exact name") out.push({ kind, query: name, limit: 10 });
    if (kind === "prefix") out.push({ kind, query: name.split(" ").slice(0, 3).join(" "), limit: 10 });
    if (kind === "misspelling") out.push({ kind, query: name.replace(/([aeiou])/, "$1$1"), limit: 10 });
    if (kind === "partial words") out.push({ kind, query: `${name.split(" ")[2]} ${name.split(" ").at(-1)}`, limit: 10 });
  }
  return out;
}


async function main() {
  const pg = await startEmbeddedPostgres();
  await setupDatabase(pg.url);
  const db = new Database(pg.url, { max: 4 });
  const target = await createPerson(db, { displayName: "bench-target" });
  for (let p = 0; p < OTHER_PEOPLE; p++) {
    const other = await createPerson(db, { displayName: `bench-other-${p}` });
    await load(db, other.id, 0, OTHERS_EACH);
  }

  const results: Array<{ scale: number; kind: string; n: number; p50: number; p95: number; hitRate: number }> = [];
  let loaded = 0;
  const owner = postgres(pg.url, { max: 1, onnotice: () => {} });
  for (const scale of SCALES) {
    const started = Date.now();
    // Bulk load the way an operator would: without the HNSW index, then build it once.
    await owner`drop index if exists entities_embedding_hnsw`;
    await load(db, target.id, loaded, scale);
    await owner.unsafe("set maintenance_work_mem = '1GB'; create index entities_embedding_hnsw on entities using hnsw (embedding vector_cosine_ops); analyze entities");
    loaded = scale;
    console.error(`loaded ${scale} entities for the target person in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const all = queries(scale);
    for (const q of all.slice(0, 10)) await run(q); // warm-up
    const timings = new Map<string, { ms: number[]; hits: number }>();
    for (const q of all) {
      const t0 = performance.now();
      const found = await run(q);
      const ms = performance.now() - t0;
      const expected = q.kind === "typed list" ? found.length > 0 : found.some((f) => normalizeName(f).startsWith(normalizeName(q.query).split(" ").slice(0, 2).join(" ")) || q.kind === "misspelling" || q.kind === "partial words");
      for (const key of [q.kind, "all"]) {
        const entry = timings.get(key) ?? { ms: [], hits: 0 };
        entry.ms.push(ms);
        if (expected && found.length > 0) entry.hits++;
        timings.set(key, entry);
      }
    }
    for (const [kind, { ms, hits }] of timings) {
      results.push({ scale, kind, n: ms.length, p50: round(percentile(ms, 50), 2), p95: round(percentile(ms, 95), 2), hitRate: round(hits / ms.length, 2) });
    }
  }

  async function run(q: { query: string; type?: string; limit: number }) {
    const [embedding] = await localEmbedder.embed([q.query]);
    const rows = await db.withUser(target.id, (tx) => recallEntities(tx, target.id, { query: q.query, ...(q.type ? { type: q.type } : {}), limit: q.limit, embedding: embedding! }));
    return rows.map((r) => r.entity.name);
  }

  const lines = [
    "| entities (target person) | query kind | n | p50 ms | p95 ms | answered |",
    "|---:|---|---:|---:|---:|---:|",
    ...results.map((r) => `| ${r.scale.toLocaleString("en")} | ${r.kind} | ${r.n} | ${r.p50} | ${r.p95} | ${Math.round(r.hitRate * 100)}% |`),
  ];
  const table = lines.join("\n");
  console.log(table);
  const meta = { date: new Date().toISOString(), node: process.version, others: `${OTHER_PEOPLE} people × ${OTHERS_EACH}`, engine: "PGlite 0.5 (Postgres 17, WASM) + pgvector, over the wire protocol" };
  writeFileSync(new URL("./results/recall.json", import.meta.url), JSON.stringify({ ...meta, results }, null, 2) + "\n");
  writeFileSync(new URL("./results/recall.md", import.meta.url), `# memory_recall latency\n\n${JSON.stringify(meta)}\n\n${table}\n`);
  await owner.end({ timeout: 1 });
  await db.close();
  await pg.stop();
}


main().catch((error) => {
  console.error(error);
  process.exit(1);
});
