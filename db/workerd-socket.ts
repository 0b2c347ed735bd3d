// A postgres.js socket over `cloudflare:sockets` for code running in workerd.
// postgres.js's own Workers polyfill leaves the connection's `writer.ready` promise without a
// rejection handler, so an unreachable database surfaces as an unhandled rejection on top of the
// query error (it fails vitest runs and pollutes production logs). This socket awaits `opened` first,
// so a refused connection is one ordinary, handled error, and it forwards everything else unchanged.
// postgres.js starts its connect_timeout only once the socket factory has returned, so the wait for
// `opened` (a black-holed address never answers the TCP handshake) is bounded here, by the same value.
import { Buffer } from "node:buffer";
import { EventEmitter } from "node:events";
import { Database, type DatabaseOptions } from "./database";

interface PostgresSocketOptions {
  host: string[];
  port: number[];
  /** postgres.js passes its whole options object; connect_timeout is in seconds. */
  connect_timeout?: number;
}

/** postgres.js `socket` option: opens a plain TCP connection to the first host. */
export async function openWorkerdSocket(options: PostgresSocketOptions): Promise<EventEmitter> {
  const { connect } = await import("cloudflare:sockets");
  const host = options.host[0] ?? "localhost";
  const port = options.port[0] ?? 5432;
  const raw = connect(`${host}:${port}`);
  await opened(raw, host, port, options.connect_timeout); // rejects here, handled by postgres.js, when nothing listens
  const writer = raw.writable.getWriter();
  const reader = raw.readable.getReader();
  const socket = Object.assign(new EventEmitter(), {
    readyState: "open" as "open" | "closed",
    host,
    port,
    write(data: Uint8Array, callback?: () => void) {
      writer.write(data).then(() => callback?.(), fail);
      return true;
    },
    end(data?: Uint8Array) {
      if (data) socket.write(data, () => void raw.close().catch(() => {}));
      else void raw.close().catch(() => {});
    },
    destroy() {
      socket.end();
    },
    pause() {},
    resume() {},
    setKeepAlive() {},
  });
  function fail(error: unknown) {
    if (socket.readyState === "closed") return;
    socket.emit("error", error);
    close();
  }
  function close() {
    if (socket.readyState === "closed") return;
    socket.readyState = "closed";
    socket.emit("close");
  }
  raw.closed.then(close, fail);
  void (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        socket.emit("data", Buffer.from(value));
      }
      close();
    } catch (error) {
      fail(error);
    }
  })();
  return socket;
}

/** Waits for the TCP handshake, at most `timeoutSeconds`; on expiry the socket is closed and the wait fails. */
async function opened(raw: { opened: Promise<unknown>; close(): Promise<void> }, host: string, port: number, timeoutSeconds: number | undefined): Promise<void> {
  if (!timeoutSeconds) {
    await raw.opened;
    return;
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      void raw.close().catch(() => {});
      // The shape of postgres.js's own connect timeout error, so callers recognise one kind.
      reject(Object.assign(new Error(`write CONNECT_TIMEOUT ${host}:${port}`), { code: "CONNECT_TIMEOUT", errno: "CONNECT_TIMEOUT", address: host, port }));
    }, timeoutSeconds * 1000);
  });
  try {
    await Promise.race([raw.opened, expired]);
  } finally {
    clearTimeout(timer);
    raw.opened.catch(() => {}); // a late refusal after the deadline is already reported
  }
}

/** A Database for code running in workerd (the Worker and its Durable Objects); `options` override the defaults. */
export function workerdDatabase(connectionString: string, options: DatabaseOptions = {}): Database {
  // Idle connections close after 10 s: every agent keeps its Database, and a thousand quiet agents
  // must not hold a thousand connections open (Hyperdrive pools behind them; locally they are real).
  return new Database(connectionString, { socket: openWorkerdSocket, idleTimeoutSeconds: 10, ...options });
}
