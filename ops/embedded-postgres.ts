// The embedded Postgres of `npm start` and of the test suites: PGlite (real Postgres compiled to WASM)
// with vector, pg_trgm and uuid-ossp, served over the Postgres wire protocol on loopback.
import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import { uuid_ossp } from "@electric-sql/pglite/contrib/uuid_ossp";
import { vector } from "@electric-sql/pglite-pgvector";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";

export interface EmbeddedPostgres {
  url: string;
  port: number;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  /** Directory for the data files; in memory when omitted. */
  dataDir?: string;
  /** TCP port on 127.0.0.1; 0 picks a free one. */
  port?: number;
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions = {}): Promise<EmbeddedPostgres> {
  const db = await PGlite.create({
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    extensions: { vector, pg_trgm, uuid_ossp },
  });
  // PGlite is one session; the socket server multiplexes clients onto it, keeping each transaction on
  // the connection that opened it. The default of one connection breaks any pooled client, and every
  // running agent may hold one (closed after 10 s idle): 50 was exhausted by 60 agents in a benchmark.
  const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: options.port ?? 0, maxConnections: 500 });
  await server.start();
  const address = server.getServerConn();
  const port = Number(address.split(":").pop());
  let stopped = false;
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    port,
    async stop() {
      if (stopped) return;
      stopped = true;
      await server.stop();
      await db.close();
    },
  };
}
