// The embedded Postgres of `npm start` and of the test suites: PGlite (real Postgres compiled to WASM)
// with vector, pg_trgm and uuid-ossp, served over the Postgres wire protocol on loopback.
import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import { uuid_ossp } from "@electric-sql/pglite/contrib/uuid_ossp";
import { vector } from "@electric-sql/pglite-pgvector";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import type { Server, Socket } from "node:net";

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
  keepSocketErrorsHandled(server);
  const address = server.getServerConn();
  const port = Number(address.split(":").pop());
  let stopping: Promise<void> | undefined;
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    port,
    // Every caller waits for the one close (the data directory is only safe once PGlite has closed).
    stop: () =>
      (stopping ??= (async () => {
        await server.stop();
        await db.close();
      })()),
  };
}

/**
 * pglite-socket removes every 'error' listener from a client socket when it detaches it, so a client
 * that resets its connection afterwards (a test process ending, workerd dropping a socket) raises an
 * unhandled 'error' event and takes the whole process down (npm start, or the test run's main process).
 * Every client socket keeps a listener of ours, re-added whenever the library strips them; the
 * library's own handling is untouched.
 */
function keepSocketErrorsHandled(server: PGLiteSocketServer): void {
  const net = (server as unknown as { server: Server | null }).server;
  net?.on("connection", (socket: Socket) => {
    const ignore = () => {};
    const removeAll = socket.removeAllListeners.bind(socket);
    socket.removeAllListeners = ((event?: string | symbol) => {
      const result = removeAll(event);
      if (event === undefined || event === "error") socket.on("error", ignore);
      return result;
    }) as Socket["removeAllListeners"];
    socket.on("error", ignore);
  });
}
