// A postgres.js socket over `cloudflare:sockets` for code running in workerd.
// postgres.js's own Workers polyfill leaves the connection's `writer.ready` promise without a
// rejection handler, so an unreachable database surfaces as an unhandled rejection on top of the
// query error (it fails vitest runs and pollutes production logs). This socket takes the writer only
// once `opened` has resolved, so a refused connection is one ordinary, handled error, and it forwards
// everything else unchanged.
//
// A connection that could not be made is reported on the socket, as a Node socket does: 'error', then
// 'close'. The factory returns at once and never rejects, because postgres.js (3.4.x, createSocket)
// answers a rejected `socket` factory with error(e) and nothing more: no 'close' follows, so that
// connection stays in the pool's `connecting` queue for good. Each refusal then cost the pool one of
// its `max` slots, and once all were gone the next query waited for a connection that never came,
// until the transaction deadline. Since wrangler 4.164 (miniflare 5) local Hyperdrive is workerd's own,
// and with Postgres down it rejects `opened` ("connection attempt failed") where miniflare 4's Node
// proxy accepted the connection first, so an agent's pool was dead after five refusals. Returning at
// once also lets postgres.js's connect_timeout, which starts when the factory returns and ends at the
// server's first ReadyForQuery, bound the whole attempt: TCP handshake, startup and authentication.
//
// A peer that accepts and then closes before the server has said anything (a proxy or load balancer
// with no database behind it) is a failed connection too. Reported as a plain close, postgres.js
// reconnects at once, again and again (thousands of times a second), until the transaction deadline.
import { Buffer } from "node:buffer";
import { EventEmitter } from "node:events";
import { Database, type DatabaseOptions } from "./database";

interface PostgresSocketOptions {
  host: string[];
  port: number[];
}

interface RawSocket {
  opened: Promise<unknown>;
  closed: Promise<unknown>;
  readable: ReadableStream<Uint8Array>;
  writable: WritableStream<Uint8Array>;
  close(): Promise<void>;
}

/** postgres.js `socket` option: opens a plain TCP connection to the first host. */
export async function openWorkerdSocket(options: PostgresSocketOptions): Promise<EventEmitter> {
  const { connect } = await import("cloudflare:sockets");
  const host = options.host[0] ?? "localhost";
  const port = options.port[0] ?? 5432;
  let raw: RawSocket | undefined;
  let writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  /** Whether the server has sent anything, and whether this side asked for the close. */
  let answered = false;
  let shutHere = false;
  const socket = Object.assign(new EventEmitter(), {
    readyState: "open" as "open" | "closed",
    host,
    port,
    write(data: Uint8Array, callback?: () => void) {
      if (socket.readyState === "closed") return false;
      // Before the handshake, writes wait for it, in order (postgres.js sends its StartupMessage at once).
      void ready
        .then(() => writer?.write(data))
        .then(
          () => callback?.(),
          (error: unknown) => fail(error),
        );
      return true;
    },
    end(data?: Uint8Array) {
      if (data && socket.readyState === "open") socket.write(data, shut);
      else shut();
    },
    /** Closes the connection and reports 'close' without waiting for workerd (postgres.js destroys on its connect timeout). */
    destroy() {
      shut();
      close();
    },
    pause() {},
    resume() {},
    setKeepAlive() {},
  });
  function shut() {
    shutHere = true;
    void raw?.close().catch(() => {});
  }
  function fail(error: unknown, deferred = false) {
    if (socket.readyState === "closed") return;
    // postgres.js adds its listeners once the factory's promise has resolved: an error before that (a
    // synchronous refusal) waits one turn for them rather than throwing from an unheard emit.
    if (socket.listenerCount("error") === 0 && !deferred) {
      setTimeout(() => fail(error, true), 0);
      return;
    }
    shut();
    if (socket.listenerCount("error") > 0) socket.emit("error", error);
    close();
  }
  /** The other side closed: a failed connection if the server never said anything, else an ordinary close. */
  function ended() {
    if (!answered && !shutHere) fail(connectionError("CONNECTION_CLOSED", host, port));
    else close();
  }
  function close() {
    if (socket.readyState === "closed") return;
    socket.readyState = "closed";
    // No `hadError` argument: postgres.js would grow its reconnect backoff on each failed connection
    // (up to 20 s), holding later attempts past connect_timeout; retrying is the callers' policy.
    socket.emit("close");
  }
  let ready: Promise<void>;
  try {
    const opening = connect(`${host}:${port}`) as RawSocket;
    raw = opening;
    ready = opening.opened.then(() => {
      writer = opening.writable.getWriter();
    });
  } catch (error) {
    ready = Promise.reject(error);
  }
  void ready.then(
    () => read(raw!),
    (error: unknown) => fail(error),
  );
  void raw?.closed.then(ended, (error: unknown) => fail(error));

  async function read(connection: RawSocket) {
    const reader = connection.readable.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        answered = true;
        socket.emit("data", Buffer.from(value));
      }
      ended();
    } catch (error) {
      fail(error);
    }
  }
  return socket;
}

/** An error in the shape of postgres.js's own connection errors (code, errno, address, port), so callers recognise one kind. */
function connectionError(code: string, host: string, port: number): Error {
  return Object.assign(new Error(`write ${code} ${host}:${port}`), { code, errno: code, address: host, port });
}

/** A Database for code running in workerd (the Worker and its Durable Objects); `options` override the defaults. */
export function workerdDatabase(connectionString: string, options: DatabaseOptions = {}): Database {
  // Idle connections close after 10 s: every agent keeps its Database, and a thousand quiet agents
  // must not hold a thousand connections open (Hyperdrive pools behind them; locally they are real).
  return new Database(connectionString, { socket: openWorkerdSocket, idleTimeoutSeconds: 10, ...options });
}
