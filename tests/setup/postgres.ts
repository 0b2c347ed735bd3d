// Global setup (runs in Node once per test run): the embedded Postgres every suite uses, set up with
// the same `npm run db:setup` code as production, a server that plays a hung database, and the HTTP
// stand-ins for Telegram and a chat-completions model (tests/setup/stand-ins.ts).
import { createRequire } from "node:module";
import { createServer, type Socket } from "node:net";
import type { TestProject } from "vitest/node";
import { DEFAULT_WORKER_ROLE, setupDatabase, workerDatabaseUrl } from "../../ops/db-setup";
import { startEmbeddedPostgres } from "../../ops/embedded-postgres";
import { startStandIns } from "./stand-ins";

const { guardLocalProxies } = createRequire(import.meta.url)("../../ops/wrangler-guard.cjs") as {
  guardLocalProxies(databaseAddress: string, log?: (line: string) => void): void;
};

/**
 * SOMA_TEST_DATABASE_URL points the suites at a PostgreSQL server of your own instead of the embedded
 * one (a superuser's URL to an empty database with vector, pg_trgm, uuid-ossp and btree_gin available):
 * a check that nothing depends on PGlite. The setup runs there as it does here; nothing is dropped after.
 */
async function startPostgres(): Promise<{ url: string; stop(): Promise<void> }> {
  const url = process.env.SOMA_TEST_DATABASE_URL;
  return url ? { url, stop: async () => {} } : startEmbeddedPostgres();
}

export default async function setup(project: TestProject) {
  const postgres = await startPostgres();
  // The Workers pool runs miniflare's Hyperdrive proxy in this process: without the guard, one socket
  // workerd resets mid-query (an abandoned statement) crashes the whole test run with ECONNRESET.
  const { hostname, port } = new URL(postgres.url);
  guardLocalProxies(`${hostname}:${port}`, () => {});
  // The Worker connects as its login role, as in production; the owner URL is for setup and for
  // tests that check what really is in the tables.
  const worker = { role: DEFAULT_WORKER_ROLE, password: "soma-worker-test-password" };
  await setupDatabase(postgres.url, () => {}, { worker });

  const sockets = new Set<Socket>();
  const hanging = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => hanging.listen(0, "127.0.0.1", resolve));
  const address = hanging.address();
  const hangingPort = typeof address === "object" && address ? address.port : 0;

  const standIns = await startStandIns();
  project.provide("standInUrl", standIns.url);
  project.provide("databaseUrl", postgres.url);
  project.provide("workerDatabaseUrl", workerDatabaseUrl(postgres.url, worker));
  project.provide("hangingDatabaseUrl", `postgres://postgres:postgres@127.0.0.1:${hangingPort}/postgres`);

  return async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => hanging.close(() => resolve()));
    await standIns.stop();
    await postgres.stop();
  };
}
