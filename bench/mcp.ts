// `npm run bench:mcp`: search_memory over HTTP through the official MCP client, next to memory_recall's
// own path inside the agent, on the same person holding 10k memories (BENCH_MCP_MEMORIES) in Soma as
// `npm start` runs it (wrangler dev, workerd, the embedded Postgres; or, with BENCH_DATABASE_URL, an
// empty database on a PostgreSQL server, as `npm start` runs with DATABASE_URL: bench/results/mcp-postgres).
//   search_memory  the app's view: MCP client → /mcp (the OAuth provider checks the token in KV, a fresh
//                  McpServer, the person's budget spent in their agent, the local embedder, recall
//                  under RLS, the email fence, JSON) → the answer, measured at the client
//   memory_recall  the agent's tool path without the model: the local embedder + Database.withUser +
//                  recall against the same Postgres, in this process
// The app gets its token the way a person grants it: dynamic registration, the consent page (signed in
// with a session made for the bench), Allow, the code exchanged with PKCE. The person's search budget
// is 60 a minute (agents/rate-limit.ts), shared by every door: the HTTP queries run in rounds of 55 with
// a minute's pause between them. Writes bench/results/mcp.json and .md.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { localEmbedder } from "../agents/integrations/model/embeddings";
import { Database } from "../db/database";
import { createPerson, createSession } from "../db/repositories/auth";
import { normalizeName, recall } from "../db/repositories/memory";
import { start } from "../ops/start";
import { freePort } from "../tests/node/helpers";
import { markdownTable, mcpAccessToken, serverVersion, summary, writeResults } from "./support";

const server = process.env.BENCH_DATABASE_URL;
const MEMORIES = Number(process.env.BENCH_MCP_MEMORIES ?? 10_000);
const QUERIES = Number(process.env.BENCH_MCP_QUERIES ?? 165);
const ROUND = 55;
const TYPES = ["book", "movie", "place", "person", "project", "note"] as const;
const WORDS =
  "amber birch cobalt delta ember fjord granite harbor indigo juniper kestrel lantern meadow nimbus orchid prairie quartz raven sierra tundra".split(
    " ",
  );

const nameFor = (i: number) => `${WORDS[i % 20]} ${WORDS[Math.floor(i / 20) % 20]} ${WORDS[Math.floor(i / 400) % 20]} ${i}`;

function query(q: number): { query: string; type?: string } {
  const i = (q * 7919) % MEMORIES;
  switch (q % 3) {
    case 0:
      return { query: nameFor(i) };
    case 1:
      return { query: TYPES[i % TYPES.length]!, type: TYPES[i % TYPES.length]! };
    default:
      return { query: nameFor(i).replace(/[aeiou]/, "") };
  }
}

async function load(db: Database, userId: string): Promise<void> {
  for (let from = 0; from < MEMORIES; from += 500) {
    const ids = Array.from({ length: Math.min(500, MEMORIES - from) }, (_, k) => from + k);
    const vectors = await localEmbedder.embed(ids.map((i) => `${TYPES[i % TYPES.length]}: ${nameFor(i)}`));
    const rows = ids.map(
      (i, k) =>
        sql`(${userId}, ${TYPES[i % TYPES.length]}, ${nameFor(i)}, ${normalizeName(nameFor(i))}, ${`[${vectors[k]!.join(",")}]`}::vector, now() - (${i % 365} * interval '1 day'))`,
    );
    await db.withUser(userId, (tx) =>
      tx.execute(sql`insert into entities (user_id, type, name, normalized_name, embedding, told_at) values ${sql.join(rows, sql`, `)}`),
    );
  }
}

async function main() {
  const app = await start(
    {
      PATH: process.env.PATH ?? "",
      PORT: String(await freePort()),
      SOMA_STATE_DIR: mkdtempSync(`${tmpdir()}/soma-bench-mcp-`),
      ...(server ? { DATABASE_URL: server } : {}),
    },
    () => {},
  );
  const db = new Database(app.databaseUrl, { max: 2 });
  try {
    const person = await createPerson(db, { displayName: "bench-mcp" });
    console.log(`loading ${MEMORIES} memories…`);
    await load(db, person.id);
    // Statistics for the planner, as autovacuum would gather them after such a load (bench:recall does the same).
    const owner = postgres(app.databaseUrl, { max: 1, onnotice: () => {} });
    await owner`analyze entities`;
    const engine = await serverVersion(owner, Boolean(server));
    await owner.end();
    const token = await mcpAccessToken(app.url, `__Host-soma_session=${await createSession(db, person.id, 3600)}`);
    const client = new Client({ name: "soma-bench", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );

    // Warm both paths (the Worker's first request builds its isolate; Postgres its caches).
    for (let q = 0; q < 5; q++) {
      await client.callTool({ name: "search_memory", arguments: query(q) });
      const embedding = (await localEmbedder.embed([query(q).query]))[0] ?? null;
      await recall(db, person.id, { ...query(q), limit: 10, embedding });
    }
    const http: number[] = [];
    const agent: number[] = [];
    let refused = 0;
    for (let q = 0; q < QUERIES; q++) {
      if (q > 0 && q % ROUND === 0) {
        console.log(`${q} queries; waiting a minute for the search budget…`);
        await new Promise((resolve) => setTimeout(resolve, 61_000));
      }
      const asked = query(q);
      const t0 = performance.now();
      const result = (await client.callTool({ name: "search_memory", arguments: asked })) as { isError?: boolean };
      http.push(performance.now() - t0);
      if (result.isError) refused++;
      const t1 = performance.now();
      const embedding = (await localEmbedder.embed([asked.query]))[0] ?? null;
      await recall(db, person.id, { ...asked, limit: 10, embedding });
      agent.push(performance.now() - t1);
    }
    await client.close();
    const rows = [
      ["search_memory over HTTP (MCP client → /mcp)", ...Object.values(summary(http))],
      ["memory_recall's path (embed + recall)", ...Object.values(summary(agent))],
    ];
    writeResults(
      server ? "mcp-postgres" : "mcp",
      `search_memory over MCP against memory_recall, ${MEMORIES} memories, ${engine}`,
      markdownTable(["path", "n", "p50 ms", "p95 ms", "p99 ms", "max ms"], rows),
      { memories: MEMORIES, queries: QUERIES, refusedByBudget: refused, searchMemoryHttp: summary(http), memoryRecall: summary(agent) },
    );
    if (refused > 0) throw new Error(`${refused} searches were refused by the budget: the numbers include refusals`);
  } finally {
    await db.close();
    await app.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
