// The one way application code reaches Postgres. A Database holds a postgres.js pool but never hands
// it out: every unit of work runs in a transaction that first switches to a non-owner role with
// `set_config('role', …, true)` (= SET LOCAL ROLE) and, for user data, pins `app.user_id` for the
// row-level-security policies (db/sql/0200_rls.sql). Transaction-local settings also keep this correct
// behind Hyperdrive's transaction pooling: nothing leaks to the next borrower of the connection.
//
// Deadlines: a connection attempt gives up after `connectTimeoutSeconds`; each statement after
// `statementTimeoutMs` on the server (SQLSTATE 57014, query_canceled); and each whole transaction after
// `transactionDeadlineMs` on the client, because a server that stops answering altogether (stopped,
// behind a network black hole) never enforces its own timeout. When that last deadline expires the
// call rejects with DeadlineError("postgres") and the pool is thrown away: its connections may be
// stuck, so the next call opens fresh ones instead of queueing behind them.
import { type SQL, sql as sqlTag } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { drizzle, type PostgresJsDatabase } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { DeadlineError, withDeadline } from "../platform/deadline";
import * as schema from "./schema";

type Schema = typeof schema;
type Drizzle = PostgresJsDatabase<Schema>;
/** A drizzle transaction already scoped to one role (and, for user work, one user). */
export type Tx = Parameters<Parameters<Drizzle["transaction"]>[0]>[0];

/**
 * The rows of a hand-written statement (tx.execute of a sql`…` template), typed as `Row`: the one place
 * that claims what its columns are, so repositories name the row type once and never cast. Nothing
 * checks the claim at run time: write it as postgres.js returns the columns (timestamps as Postgres's
 * text under drizzle, numeric and bigint as text unless cast). Without `Row` the columns stay `unknown`.
 */
export async function sqlRows<Row extends object = Record<string, unknown>>(tx: Tx, query: SQL): Promise<Row[]> {
  const rows: Record<string, unknown>[] = await tx.execute(query);
  return rows as Row[];
}

/** Around each value's index in a statement compiled by `marked` (NUL: never in SQL text). */
const MARK = "\u0000";
/** Compiles a statement with its values' indexes between marks, which `inline` replaces. */
class MarkedDialect extends PgDialect {
  override escapeParam(num: number): string {
    return `${MARK}${num}${MARK}`;
  }
}
const marked = new MarkedDialect();

/**
 * A statement as text with its values written in as literals, for a simple-protocol query (no
 * parameters). Strings go as E'…' with backslashes and quotes doubled, which reads the same whatever
 * standard_conforming_strings says, and without NUL (which Postgres text cannot hold); numbers in
 * parentheses (so a negative one can never join a `-` before it into a comment); anything else is
 * refused rather than written in a form Postgres might read differently.
 */
export function inline(statement: SQL): string {
  const { sql, params } = marked.sqlToQuery(statement);
  // Text and indexes alternate between the marks.
  return sql
    .split(MARK)
    .map((part, i) => (i % 2 === 1 ? literal(params[Number(part)]) : part))
    .join("");
}

function literal(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "boolean") return String(value);
  if (typeof value === "number" && Number.isFinite(value)) return `(${value})`;
  if (typeof value === "string") return `E'${value.replaceAll(MARK, "").replaceAll("\\", "\\\\").replaceAll("'", "''")}'`;
  throw new TypeError(`a ${typeof value} cannot be written into a statement as a literal`);
}

type AppRole = "soma_app" | "soma_auth" | "soma_system";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

class InvalidUserIdError extends Error {
  constructor() {
    super("user id must be a UUID");
    this.name = "InvalidUserIdError";
  }
}

export interface DatabaseOptions {
  /** Pool size. Hyperdrive pools for us in production, so a handful per isolate is enough. */
  max?: number;
  /** Seconds to wait for a connection (TCP and the startup handshake) before failing. Default 5. */
  connectTimeoutSeconds?: number;
  /**
   * Server-side limit of each statement, set transaction-locally at the start of every transaction
   * (`statement_timeout`); the server cancels a longer one with SQLSTATE 57014. Default 10 000 ms.
   */
  statementTimeoutMs?: number;
  /**
   * Client-side deadline of each whole transaction (withUser/withAuth/withSystem, the work included).
   * On expiry the call rejects with DeadlineError("postgres") and the pool is recycled. Default 15 000 ms.
   */
  transactionDeadlineMs?: number;
  /** Seconds after which an unused connection is closed (a Durable Object keeps its Database for life). */
  idleTimeoutSeconds?: number;
  /** A socket factory in postgres.js's shape (db/workerd-socket.ts inside workerd). */
  socket?: (options: { host: string[]; port: number[] }) => Promise<unknown>;
}

const DEFAULT_STATEMENT_TIMEOUT_MS = 10_000;
const DEFAULT_TRANSACTION_DEADLINE_MS = 15_000;

interface Pool {
  client: postgres.Sql;
  db: Drizzle;
}

export class Database {
  #pool: Pool | undefined;

  // The pool is built on first use: a Worker makes a Database per request, and most requests (pages,
  // 404s, the webhook of a known sender) never query. Building it eagerly cost ~0.3 ms per request.
  constructor(
    private readonly connectionString: string,
    private readonly options: DatabaseOptions = {},
  ) {}

  get #client(): postgres.Sql {
    return this.#open().client;
  }

  #open(): Pool {
    if (!this.#pool) {
      const client = postgres(this.connectionString, {
        max: this.options.max ?? 5,
        connect_timeout: this.options.connectTimeoutSeconds ?? 5,
        ...(this.options.idleTimeoutSeconds ? { idle_timeout: this.options.idleTimeoutSeconds } : {}),
        // One round trip fewer per new connection; drizzle parses array columns itself.
        fetch_types: false,
        onnotice: () => {},
        // `socket` is a documented postgres.js option its type definitions leave out.
        ...((this.options.socket ? { socket: this.options.socket } : {}) as object),
      });
      this.#pool = { client, db: drizzle(client, { schema }) };
    }
    return this.#pool;
  }

  /** Runs `work` as `userId`: row-level security shows and accepts only that user's rows. */
  withUser<T>(userId: string, work: (tx: Tx) => Promise<T>): Promise<T> {
    if (!UUID.test(userId)) return Promise.reject(new InvalidUserIdError());
    return this.#transaction("soma_app", userId, work);
  }

  /** Runs `work` with the sign-in role: the auth schema only, no user data. */
  withAuth<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.#transaction("soma_auth", null, work);
  }

  /** Runs `work` with the narrow role for cross-user listings of background jobs (granted columns only). */
  withSystem<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.#transaction("soma_system", null, work);
  }

  /** One round trip to the server; false when it fails or takes longer than `timeoutMs`. */
  async ping(timeoutMs: number): Promise<boolean> {
    const query = this.#client`select 1 as ok`.then(
      (rows) => rows[0]?.ok === 1,
      () => false,
    );
    const timeout = new Promise<false>((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      void query.finally(() => clearTimeout(timer));
    });
    return Promise.race([query, timeout]);
  }

  /** Closes the pool (Node scripts and tests; a Worker lets the request context close its sockets). */
  close(): Promise<void> {
    return this.#pool ? this.#pool.client.end({ timeout: 1 }) : Promise.resolve();
  }

  /**
   * Reads as `userId` in one round trip: withUser's settings and `statements` sent as one simple-protocol
   * query, which Postgres runs as one implicit transaction — the settings are transaction-local, so they
   * hold for these statements and end with them, and Hyperdrive's transaction pooling takes the
   * connection back after it, as after a transaction. A transaction costs four round trips (BEGIN, the
   * settings, the work, COMMIT), each one the whole way to the database behind Hyperdrive. A simple query
   * has no parameters: the statements' values travel as literals (`inline`). Hyperdrive never answers it
   * from its cache: it caches no query calling a volatile function, and set_config is one. Resolves to
   * the rows of the last statement; for reads that need no answer between their statements (recall).
   */
  readAsUser<Row extends object>(userId: string, statements: SQL[]): Promise<Row[]> {
    if (!UUID.test(userId)) return Promise.reject(new InvalidUserIdError());
    const pool = this.#open();
    const text = [this.#settings("soma_app", userId), ...statements].map(inline).join(";\n");
    const read = pool.client.unsafe(text).then((results) => {
      // One result per statement; postgres.js returns a single statement's rows alone.
      const last = statements.length > 0 ? (results as unknown as Row[][]).at(-1) : [];
      return last ?? [];
    });
    return this.#beforeDeadline(pool, read);
  }

  /**
   * What every unit of work sets first, transaction-locally, in one statement: the role, the person, the
   * statement timeout, the vector-search settings recall relies on (HNSW scans that continue past rows
   * the person filter drops, 100 candidates wide for the 20 recall keeps: bench/recall.ts), and plans
   * made for these statements as they are: JIT off (a server built with LLVM compiled a recall's plan
   * for a second and more), no parallel workers (starting them costs more than the millisecond
   * statements they would share), and a custom plan for each execution (a prepared statement's generic
   * plan cannot see the person's row count).
   */
  #settings(role: AppRole, userId: string | null): SQL {
    const statementTimeout = `${Math.max(0, Math.round(this.options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS))}ms`;
    return sqlTag`select set_config('role', ${role}, true), set_config('app.user_id', ${userId ?? ""}, true),
                      set_config('statement_timeout', ${statementTimeout}, true),
                      set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', '100', true),
                      set_config('jit', 'off', true), set_config('max_parallel_workers_per_gather', '0', true),
                      set_config('plan_cache_mode', 'force_custom_plan', true)`;
  }

  #transaction<T>(role: AppRole, userId: string | null, work: (tx: Tx) => Promise<T>): Promise<T> {
    const pool = this.#open();
    const transaction = pool.db.transaction(async (tx) => {
      await tx.execute(this.#settings(role, userId));
      return work(tx);
    });
    return this.#beforeDeadline(pool, transaction);
  }

  /** `work` on `pool`, rejected with DeadlineError when it outlasts the deadline (the pool then recycled). */
  #beforeDeadline<T>(pool: Pool, work: Promise<T>): Promise<T> {
    return withDeadline(work, this.options.transactionDeadlineMs ?? DEFAULT_TRANSACTION_DEADLINE_MS, "postgres").catch((error: unknown) => {
      if (error instanceof DeadlineError) this.#recycle(pool);
      throw error;
    });
  }

  /**
   * Drops `pool` without waiting for it: its connections are ended at once (their queries, the hung
   * one included, reject with postgres.js's CONNECTION_DESTROYED, handled here or by withDeadline), and
   * the next call builds a new pool. A long-lived Durable Object never accumulates hung connections.
   */
  #recycle(pool: Pool): void {
    if (this.#pool === pool) this.#pool = undefined;
    pool.client.end({ timeout: 0 }).catch(() => {});
  }
}
