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
  deliverWholeExchanges(server);
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

/**
 * pglite-socket runs each chunk a client sends as one exclusive unit on the single PGlite session,
 * and lets other clients' chunks run in between. TCP (and the Hyperdrive proxy in front of it) may
 * split a client's Bind and Execute across two chunks: another client's messages then ran in between,
 * replaced the session's unnamed portal, and the first client failed with `portal "" does not
 * exist` (seen under load in the test suites). Each client's bytes are handed over only up to the
 * last message after which it waits for the server (Sync, Flush, a simple Query, Terminate, copy data,
 * an authentication answer), so one exchange always runs whole.
 */
function deliverWholeExchanges(server: PGLiteSocketServer): void {
  const net = (server as unknown as { server: Server | null }).server;
  // Message types after which a client may wait for an answer: S Sync, H Flush, Q Query, X Terminate,
  // d/c/f copy data/done/fail, p password and SASL answers.
  const BOUNDARY = new Set(["S", "H", "Q", "X", "d", "c", "f", "p"].map((c) => c.charCodeAt(0)));
  net?.on("connection", (socket: Socket) => {
    const emit = socket.emit.bind(socket);
    let pending: Buffer = Buffer.alloc(0);
    let started = false;
    socket.emit = ((event: string | symbol, ...args: unknown[]) => {
      if (event !== "data") return emit(event, ...args);
      pending = pending.length ? Buffer.concat([pending, args[0] as Buffer]) : (args[0] as Buffer);
      let offset = 0;
      let deliverable = 0;
      while (pending.length - offset >= (started ? 5 : 8)) {
        if (!started) {
          // Untyped startup messages: SSLRequest / GSSENCRequest (the client then waits), or StartupMessage.
          const length = pending.readInt32BE(offset);
          if (pending.length - offset < length) break;
          const code = pending.readInt32BE(offset + 4);
          offset += length;
          deliverable = offset;
          if (code !== 80877103 && code !== 80877104) started = true;
          continue;
        }
        const length = pending.readInt32BE(offset + 1);
        if (pending.length - offset < 1 + length) break;
        const type = pending[offset]!;
        offset += 1 + length;
        if (BOUNDARY.has(type)) deliverable = offset;
      }
      if (deliverable === 0) return true;
      const chunk = pending.subarray(0, deliverable);
      pending = Buffer.from(pending.subarray(deliverable));
      return emit("data", chunk);
    }) as Socket["emit"];
  });
}
