// The embedded Postgres of `npm start` and of the test suites: PGlite (real Postgres compiled to WASM)
// with vector, pg_trgm, uuid-ossp and btree_gin, served over the Postgres wire protocol on loopback.
import { PGlite } from "@electric-sql/pglite";
import { btree_gin } from "@electric-sql/pglite/contrib/btree_gin";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import { uuid_ossp } from "@electric-sql/pglite/contrib/uuid_ossp";
import { vector } from "@electric-sql/pglite-pgvector";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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

/**
 * The superuser's password: made at random the first time a data directory is used and kept beside it
 * (`<dataDir>.password`, readable by its owner only), so a restart over the same data uses the same
 * one; a database in memory gets a new one each time. Without it any local process could connect as
 * the superuser (PGlite's `postgres` has no password of its own).
 */
function superuserPassword(dataDir: string | undefined): string {
  if (!dataDir) return randomBytes(24).toString("base64url");
  const file = `${dataDir}.password`;
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  const password = randomBytes(24).toString("base64url");
  writeFileSync(file, `${password}\n`, { mode: 0o600 });
  return password;
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions = {}): Promise<EmbeddedPostgres> {
  const password = superuserPassword(options.dataDir);
  const db = await PGlite.create({
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    extensions: { vector, pg_trgm, uuid_ossp, btree_gin },
  });
  await db.exec(`alter role ${SUPERUSER} password ${quoteLiteral(password)}`);
  // PGlite is one session; the socket server multiplexes clients onto it, keeping each transaction on
  // the connection that opened it. The default of one connection breaks any pooled client, and every
  // running agent may hold one (closed after 10 s idle): 50 was exhausted by 60 agents in a benchmark.
  const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: options.port ?? 0, maxConnections: 500 });
  await server.start();
  keepSocketErrorsHandled(server);
  deliverWholeExchanges(server);
  authenticateClients(server, db);
  const address = server.getServerConn();
  const port = Number(address.split(":").pop());
  // Where it listens, beside its data while it runs (`npm run db:query` connects with it and the password).
  const portFile = options.dataDir ? `${options.dataDir}.port` : undefined;
  if (portFile) writeFileSync(portFile, `${port}\n`);
  let stopping: Promise<void> | undefined;
  return {
    url: embeddedUrl(password, port),
    port,
    // Every caller waits for the one close (the data directory is only safe once PGlite has closed).
    stop: () =>
      (stopping ??= (async () => {
        await server.stop();
        await db.close();
        if (portFile) rmSync(portFile, { force: true });
      })()),
  };
}

const embeddedUrl = (password: string, port: number) =>
  `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;

/** The URL of the embedded Postgres running on `dataDir` (npm start's, in another process), if one is. */
export function runningEmbeddedUrl(dataDir: string): string | undefined {
  if (!existsSync(`${dataDir}.port`) || !existsSync(`${dataDir}.password`)) return undefined;
  const port = Number(readFileSync(`${dataDir}.port`, "utf8").trim());
  return Number.isInteger(port) && port > 0 ? embeddedUrl(readFileSync(`${dataDir}.password`, "utf8").trim(), port) : undefined;
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

/** Extended-query messages (Parse, Bind, Describe, Execute, Close): the client is mid-exchange until Sync. */
const EXTENDED_QUERY = new Set(["P", "B", "D", "E", "C"].map((c) => c.charCodeAt(0)));
const SYNC = "S".charCodeAt(0);
const SIMPLE_QUERY = "Q".charCodeAt(0);

/** The role PGlite's one session runs as, and the superuser clients sign in as with its password. */
const SUPERUSER = "postgres";

interface QueryQueue {
  enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number>;
  clearQueueForHandler(handlerId: number): void;
}
type RawStream = (message: Uint8Array, options: { onRawData: (data: Uint8Array) => void }) => Promise<void>;

/**
 * PGlite ignores the user and password of a StartupMessage: every client of the socket server would
 * act as the superuser, and the Worker's login role (db/sql/0100_roles.sql) would prove nothing
 * locally. Here each client is who it says it is:
 *   - the startup must name a user, the role must exist and be allowed to log in, and it must send its
 *     password (cleartext over loopback, checked against the stored SCRAM or MD5 verifier); a role
 *     without a password cannot log in, and the superuser's is random (superuserPassword);
 *   - before a client's messages run, the shared session is switched to its role with SET SESSION
 *     AUTHORIZATION (never inside a transaction: the queue keeps a transaction on its own client).
 * Limit: the session was authenticated as the superuser, so a client that itself runs SET SESSION
 * AUTHORIZATION can still become anyone. This is local development only; the production boundary
 * is PostgreSQL's own (tests/node/db-setup.test.ts checks both).
 */
function authenticateClients(server: PGLiteSocketServer, db: PGlite): void {
  const queue = (server as unknown as { queryQueue: QueryQueue }).queryQueue;
  const clients = new Map<number, { user: string; startup?: Uint8Array; verifier?: string }>();
  const origin = new WeakMap<Uint8Array, number>();
  const enqueue = queue.enqueue.bind(queue);
  queue.enqueue = (handlerId, message, onData) => {
    origin.set(message, handlerId);
    return enqueue(handlerId, message, onData);
  };
  const clear = queue.clearQueueForHandler.bind(queue);
  queue.clearQueueForHandler = (handlerId) => {
    clients.delete(handlerId);
    if (holder === handlerId) holder = null;
    clear(handlerId);
  };
  // The queue runs one message at a time and lets other clients' messages in between, except inside
  // a transaction. Between a client's Parse/Bind and its Sync the session holds that client's unnamed
  // statement and portal, which another client's messages — and the simple-query role switch below,
  // which destroys both — must not touch (`portal "" does not exist`). The session is held for the
  // client mid-exchange the way the queue holds it for a transaction.
  let holder: number | null = null;
  const inTransaction = db.isInTransaction.bind(db);
  (queue as unknown as { db: PGlite }).db = new Proxy(db, {
    get(target, property) {
      if (property === "isInTransaction") return () => inTransaction() || holder !== null;
      const value = Reflect.get(target, property) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });

  const raw = db.execProtocolRawStream.bind(db) as RawStream;
  let sessionUser = SUPERUSER;
  /** Runs one statement on the session for ourselves; its answer goes to no client. */
  const run = async (statement: string): Promise<string[]> => {
    const body = Buffer.from(`${statement}\0`);
    const message = Buffer.concat([Buffer.from("Q"), int32(body.length + 4), body]);
    const answer: Uint8Array[] = [];
    await raw(new Uint8Array(message), { onRawData: (data) => answer.push(data) });
    return dataRowValues(Buffer.concat(answer));
  };
  const become = async (user: string) => {
    if (user === sessionUser || db.isInTransaction()) return;
    // Named, not RESET: PGlite's single-user boot leaves session_authorization without a reset value.
    await run(`set session authorization ${quoteIdent(user)}`);
    sessionUser = user;
  };

  const authenticated: RawStream = async (message, options) => {
    const handlerId = origin.get(message)!;
    const client = clients.get(handlerId);
    const refuse = (code: string, text: string) => options.onRawData(errorResponse(code, text));

    if (!client && isStartupMessage(message)) {
      const user = startupParameters(message).get("user");
      if (!user) return refuse("28000", "no user name given");
      await become(SUPERUSER);
      const [canLogin, verifier] = await run(
        `select rolcanlogin::text, coalesce(rolpassword, '') from pg_authid where rolname = ${quoteLiteral(user)}`,
      );
      if (canLogin === undefined) return refuse("28000", `role "${user}" does not exist`);
      if (canLogin !== "true") return refuse("28000", `role "${user}" is not permitted to log in`);
      // Every role signs in with its password: a role without one cannot log in here.
      if (!verifier) return refuse("28P01", `role "${user}" has no password, and every role must sign in with one`);
      clients.set(handlerId, { user, startup: message, verifier });
      return options.onRawData(new Uint8Array(Buffer.concat([Buffer.from("R"), int32(8), int32(3)]))); // AuthenticationCleartextPassword
    }
    if (client?.startup && message[0] === "p".charCodeAt(0)) {
      const password = Buffer.from(message.subarray(5)).toString("utf8").replace(/\0$/, "");
      if (!passwordMatches(password, client.user, client.verifier!)) {
        clients.delete(handlerId);
        return refuse("28P01", `password authentication failed for user "${client.user}"`);
      }
      const startup = client.startup;
      clients.set(handlerId, { user: client.user });
      return raw(startup, options);
    }
    if (!client || client.startup) return refuse("08P01", "the connection has not been authenticated");
    await become(client.user);
    const type = message[0]!;
    if (EXTENDED_QUERY.has(type)) holder = handlerId;
    else if (type === SYNC || type === SIMPLE_QUERY) holder = null;
    return raw(message, options);
  };
  (db as unknown as { execProtocolRawStream: RawStream }).execProtocolRawStream = async (message, options) => {
    if (!origin.has(message)) return raw(message, options);
    try {
      await authenticated(message, options);
    } catch (error) {
      // The library's queue stops for good when this throws: answer the one client instead.
      options.onRawData(errorResponse("XX000", error instanceof Error ? error.message : String(error)));
    }
  };
}

function isStartupMessage(message: Uint8Array): boolean {
  return message.length >= 8 && Buffer.from(message).readInt32BE(4) === 196_608; // protocol 3.0
}

function startupParameters(message: Uint8Array): Map<string, string> {
  const parts = Buffer.from(message.subarray(8)).toString("utf8").split("\0");
  const parameters = new Map<string, string>();
  for (let i = 0; i + 1 < parts.length && parts[i]; i += 2) parameters.set(parts[i]!, parts[i + 1]!);
  return parameters;
}

/** The text values of every DataRow in a backend answer, in order. */
function dataRowValues(answer: Buffer): string[] {
  const values: string[] = [];
  for (let offset = 0; offset + 5 <= answer.length; ) {
    const type = answer[offset]!;
    const length = answer.readInt32BE(offset + 1);
    if (type === "D".charCodeAt(0)) {
      let at = offset + 7;
      for (let column = answer.readInt16BE(offset + 5); column > 0; column--) {
        const size = answer.readInt32BE(at);
        values.push(size < 0 ? "" : answer.toString("utf8", at + 4, at + 4 + size));
        at += 4 + Math.max(size, 0);
      }
    }
    if (type === "E".charCodeAt(0)) throw new Error(`embedded Postgres: ${answer.toString("utf8", offset + 5, offset + 1 + length)}`);
    offset += 1 + length;
  }
  return values;
}

function passwordMatches(password: string, user: string, verifier: string): boolean {
  const same = (a: Buffer, b: Buffer) => a.length === b.length && timingSafeEqual(a, b);
  const scram = /^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)$/.exec(verifier);
  if (scram) {
    const salted = pbkdf2Sync(password.normalize("NFKC"), Buffer.from(scram[2]!, "base64"), Number(scram[1]), 32, "sha256");
    const storedKey = createHash("sha256").update(createHmac("sha256", salted).update("Client Key").digest()).digest();
    return same(storedKey, Buffer.from(scram[3]!, "base64"));
  }
  if (verifier.startsWith("md5"))
    return same(
      Buffer.from(
        `md5${createHash("md5")
          .update(password + user)
          .digest("hex")}`,
      ),
      Buffer.from(verifier),
    );
  return same(Buffer.from(password), Buffer.from(verifier));
}

function errorResponse(code: string, text: string): Uint8Array {
  const fields = Buffer.from(`SFATAL\0VFATAL\0C${code}\0M${text}\0\0`);
  return new Uint8Array(Buffer.concat([Buffer.from("E"), int32(fields.length + 4), fields]));
}

function int32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeInt32BE(value);
  return buffer;
}

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;
const quoteLiteral = (text: string) => `'${text.replaceAll("'", "''")}'`;
