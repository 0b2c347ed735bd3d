// The database schema: exactly seven tables in `public` (user data, all under row-level security), the
// sign-in tables in `auth`, and in `search` the names recall matches a question's words against
// (derived from `public`, kept by a trigger, read by no role but the owner). Policies,
// roles and triggers live in db/sql/ because drizzle-kit does not express them all; `npm run db:setup`
// applies both in the spec's fixed order.
import { sql } from "drizzle-orm";
import {
  bigint,
  bit,
  check,
  customType,
  index,
  jsonb,
  pgSchema,
  pgTable,
  real,
  text,
  timestamp,
  uniqueIndex,
  uuid,
  vector,
} from "drizzle-orm/pg-core";
import { FOLD_FROM, FOLD_TO } from "./search-key";

/** Embedding width of `@cf/baai/bge-m3`, and of the local embedder that stands in for it. */
export const EMBEDDING_DIMENSIONS = 1024;

const tsvector = customType<{ data: string }>({ dataType: () => "tsvector" });

const id = () => uuid("id").primaryKey().default(sql`uuid_generate_v4()`);
const createdAt = () => timestamp("created_at", { withTimezone: true }).notNull().defaultNow();
const updatedAt = () => timestamp("updated_at", { withTimezone: true }).notNull().defaultNow();
const userId = () =>
  uuid("user_id")
    .notNull()
    .references(() => users.id, { onDelete: "cascade" });
const embedding = () => vector("embedding", { dimensions: EMBEDDING_DIMENSIONS });
/**
 * The embedding's signs, one bit a dimension (pgvector's binary_quantize): 128 bytes kept in the row,
 * where the 4 kB embedding itself is stored out of line (TOAST). Recall ranks a time window's rows by
 * Hamming distance on it first and reads the real embedding only for the best few (migration 0011).
 */
const sketch = () =>
  bit("sketch", { dimensions: EMBEDDING_DIMENSIONS }).generatedAlwaysAs(
    sql.raw(`binary_quantize(embedding)::bit(${EMBEDDING_DIMENSIONS})`),
  );
/** When the person told it: the source message's time (backfilled from it by migration 0008). */
const toldAt = () => timestamp("told_at", { withTimezone: true }).notNull().defaultNow();
/** A name's search key: accents folded the way db/search-key.ts folds a query. */
const folded = (column: string) => sql.raw(`translate(${column}, '${FOLD_FROM}', '${FOLD_TO}')`);

// ---------------------------------------------------------------------------------------------
// auth: sign-in identities and sessions. Only the narrow `soma_auth` role touches these.
// ---------------------------------------------------------------------------------------------
export const auth = pgSchema("auth");

export const authUsers = auth.table("users", {
  id: id(),
  displayName: text("display_name").notNull().default(""),
  email: text("email").unique(),
  googleSub: text("google_sub").unique(),
  telegramUserId: bigint("telegram_user_id", { mode: "number" }).unique(),
  telegramChatId: bigint("telegram_chat_id", { mode: "number" }),
  timezone: text("timezone").notNull().default("UTC"),
  /** Where each kind of message Soma sends on its own goes (agents/integrations/channels.ts). */
  notify: jsonb("notify").$type<Record<string, string>>().notNull().default({}),
  createdAt: createdAt(),
});

export const authSessions = auth.table(
  "sessions",
  {
    tokenHash: text("token_hash").primaryKey(),
    userId: uuid("user_id")
      .notNull()
      .references(() => authUsers.id, { onDelete: "cascade" }),
    createdAt: createdAt(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    userAgent: text("user_agent"),
  },
  (t) => [index("sessions_user_idx").on(t.userId)],
);

export const authLoginTokens = auth.table("login_tokens", {
  tokenHash: text("token_hash").primaryKey(),
  userId: uuid("user_id")
    .notNull()
    .references(() => authUsers.id, { onDelete: "cascade" }),
  purpose: text("purpose").notNull().default("login"),
  createdAt: createdAt(),
  expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  usedAt: timestamp("used_at", { withTimezone: true }),
});

/**
 * Tombstones of deleted accounts, one row per sign-in identity the person had ("telegram:<user id>",
 * "google:<sub>", "email:<address>", each SHA-256 hashed). For a day after a deletion no door (a
 * redelivered Telegram update, another isolate's cached sender, Google sign-in, a login link) may
 * create a person for that identity again; `notified_at` is when the person was told, once.
 */
export const authDeletedPeople = auth.table("deleted_people", {
  identityHash: text("identity_hash").primaryKey(),
  deletedAt: timestamp("deleted_at", { withTimezone: true }).notNull().defaultNow(),
  notifiedAt: timestamp("notified_at", { withTimezone: true }),
});

/**
 * Group chats Soma was written in, and when it last said it only talks in private chats: at most once
 * a day per group, across isolates. Holds a group's chat id only, never a person.
 */
export const authGroupChatNotices = auth.table("group_chat_notices", {
  chatId: bigint("chat_id", { mode: "number" }).primaryKey(),
  notifiedAt: timestamp("notified_at", { withTimezone: true }).notNull().defaultNow(),
});

// ---------------------------------------------------------------------------------------------
// public: the seven tables of user data.
// ---------------------------------------------------------------------------------------------

/** One row per person, mirrored from auth.users by a trigger (db/sql/0300_triggers.sql). */
export const users = pgTable(
  "users",
  {
    id: uuid("id")
      .primaryKey()
      .references(() => authUsers.id, { onDelete: "cascade" }),
    displayName: text("display_name").notNull().default(""),
    timezone: text("timezone").notNull().default("UTC"),
    telegramUserId: bigint("telegram_user_id", { mode: "number" }).unique(),
    telegramChatId: bigint("telegram_chat_id", { mode: "number" }),
    notify: jsonb("notify").$type<Record<string, string>>().notNull().default({}),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  // The hourly fan-outs read the people of the zones where it is that hour (db/repositories/digest.ts).
  (t) => [index("users_timezone_idx").on(t.timezone)],
);

/** Where a memory came from: a message, an email, … Unique per (user, kind, external id): ingestion is idempotent. */
export const sources = pgTable(
  "sources",
  {
    id: id(),
    userId: userId(),
    kind: text("kind").notNull(),
    externalId: text("external_id").notNull(),
    payload: jsonb("payload").$type<Record<string, unknown>>().notNull().default({}),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("sources_user_kind_external_uq").on(t.userId, t.kind, t.externalId)],
);

/**
 * A person's connections to outside services, per (user, provider): OAuth tokens (provider "google"),
 * and each browser's Web Push subscription (provider "webpush:<sha-256 of its endpoint>"). Tokens and
 * subscriptions are encrypted with TOKEN_ENCRYPTION_KEY before they reach this table.
 */
export const oauthConnections = pgTable(
  "oauth_connections",
  {
    id: id(),
    userId: userId(),
    provider: text("provider").notNull(),
    accountEmail: text("account_email"),
    scope: text("scope"),
    accessTokenEnc: text("access_token_enc"),
    refreshTokenEnc: text("refresh_token_enc"),
    accessTokenExpiresAt: timestamp("access_token_expires_at", { withTimezone: true }),
    gmailHistoryId: text("gmail_history_id"),
    watchExpiresAt: timestamp("watch_expires_at", { withTimezone: true }),
    /** A Web Push subscription's device as the person sees it ("Chrome on Android"); null for Google. */
    label: text("label"),
    /** When something was last delivered through it (a push subscription). */
    lastUsedAt: timestamp("last_used_at", { withTimezone: true }),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("oauth_connections_user_provider_uq").on(t.userId, t.provider),
    // A mailbox has one owner: its mail pushes are routed to them. Enforced here, not only checked.
    uniqueIndex("oauth_connections_provider_account_email_uq").on(t.provider, sql`lower(${t.accountEmail})`),
  ],
);

/** The things a person cares about. One row per (user, type, normalized name). */
export const entities = pgTable(
  "entities",
  {
    id: id(),
    userId: userId(),
    type: text("type").notNull(),
    name: text("name").notNull(),
    normalizedName: text("normalized_name").notNull(),
    properties: jsonb("properties").$type<Record<string, unknown>>().notNull().default({}),
    embedding: embedding(),
    /** normalized_name with accents folded: what the trigram index and recall compare. */
    searchName: text("search_name").generatedAlwaysAs(folded("normalized_name")),
    // 'simple': no stemming, no stop words — names in any language are kept word for word, weight A,
    // and every word's beginnings (2 letters up) are words too, weight D: recall matches a word's
    // beginning as one lexeme in the GIN index rather than as a prefix query, which gathers every
    // person's words of that beginning (migration 0017, db/repositories/recall.ts).
    search: tsvector("search").generatedAlwaysAs(sql`name_search_vector(${folded("normalized_name")} || ' ' || type)`),
    status: text("status", { enum: ["active", "archived"] })
      .notNull()
      .default("active"),
    sourceId: uuid("source_id").references(() => sources.id, { onDelete: "set null" }),
    toldAt: toldAt(),
    /** When it happened, where the person said so ("I finished Dune last week"). */
    happenedAt: timestamp("happened_at", { withTimezone: true }),
    /** When it counts as being from: when it happened, else when it was told. A column of its own (not
     * the coalesce() in each query) because under row-level security only a leakproof comparison of a
     * plain column reaches the index: with coalesce() every time-bounded recall read all the person's rows. */
    recallAt: timestamp("recall_at", { withTimezone: true }).generatedAlwaysAs(sql`coalesce(happened_at, told_at)`),
    sketch: sketch(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("entities_user_type_name_uq").on(t.userId, t.type, t.normalizedName),
    // (user, type, updated_at): "which books…" reads the newest of a type straight from the index.
    index("entities_user_type_idx").on(t.userId, t.type, t.updatedAt),
    // (user, status, when): how many of the person's memories a window holds, counted up to recall's
    // SCOPE_ROWS + 1 in narrow entries (migration 0021; the covering recall_at index's are 200 bytes wide).
    index("entities_user_status_recall_at_idx").on(t.userId, t.status, t.recallAt),
    index("entities_embedding_hnsw").using("hnsw", t.embedding.op("vector_cosine_ops")),
    // fastupdate off: GIN's pending list makes every search scan all recent inserts until a vacuum
    // merges them (11 ms of a 19 ms recall at 100k on the embedded Postgres, which has no autovacuum).
    // Memory is written a few rows per turn and searched every turn: pay at insert time.
    // user_id first (btree_gin): a name or word scan stays inside one person's rows instead of reading
    // everyone's matches and leaving the policy to drop them (a timing side channel; bench/recall.ts).
    index("entities_user_name_trgm").using("gin", t.userId, t.searchName.op("gin_trgm_ops")).with({ fastupdate: false }),
    // Recall with since/until bounds "when": when it happened if the person said so, else when told.
    // Both also carry (INCLUDE, migration 0018) status, id, sketch and search_name: ranking a scope by sketch reads
    // the index alone; this one also the type (migration 0022: releases before 0025 found a window's names
    // holding a question's words in it).
    index("entities_user_recall_at_idx").on(t.userId, t.recallAt),
    // "Which books did I read last month?": the type's window straight from the index, not the whole
    // window filtered by type (7,000 rows read and dropped for a month at 100k).
    index("entities_user_type_recall_at_idx").on(t.userId, t.type, t.recallAt),
    // A name that is the question itself ("The Name of the Rose"): found whatever its rank among
    // hundreds of names with the same words (db/repositories/recall.ts). It also carries (INCLUDE,
    // migration 0019) status, type and id, so that the name's row is found in it alone.
    index("entities_user_search_name_idx").on(t.userId, t.searchName),
    // The memory center and MCP's list_memories: newest learned first, a page at a time by (created_at,
    // id) (migration 0024). Without it every page sorted all of the person's memories: 43 ms for the
    // first 20 of 100k (PostgreSQL 15).
    index("entities_user_created_idx").on(t.userId, t.createdAt, t.id),
  ],
);

/**
 * Typed relations between entities. Closed by setting valid_to, never deleted.
 *
 * `idempotency_key` (agents/turn/tools/idempotency.ts: source message + tool + arguments) makes a turn that is
 * re-run after a crash return the edge it already wrote instead of a second one. Deliberately not a
 * unique (user_id, from_id, to_id, type): consolidation (db/repositories/consolidate.ts) repoints a
 * merged entity's edges onto the survivor, which can legitimately meet an identical relation there and
 * would then fail the whole nightly merge; and a relation closed by valid_to may be opened again later.
 * Null for edges written outside a turn; the unique index is per person (nulls never collide).
 */
export const edges = pgTable(
  "edges",
  {
    id: id(),
    userId: userId(),
    fromId: uuid("from_id")
      .notNull()
      .references(() => entities.id, { onDelete: "cascade" }),
    toId: uuid("to_id")
      .notNull()
      .references(() => entities.id, { onDelete: "cascade" }),
    type: text("type").notNull(),
    properties: jsonb("properties").$type<Record<string, unknown>>().notNull().default({}),
    validFrom: timestamp("valid_from", { withTimezone: true }).notNull().defaultNow(),
    validTo: timestamp("valid_to", { withTimezone: true }),
    sourceId: uuid("source_id").references(() => sources.id, { onDelete: "set null" }),
    idempotencyKey: text("idempotency_key"),
    createdAt: createdAt(),
  },
  (t) => [
    index("edges_user_from_idx").on(t.userId, t.fromId),
    index("edges_user_to_idx").on(t.userId, t.toId),
    uniqueIndex("edges_user_idempotency_key_uq").on(t.userId, t.idempotencyKey),
  ],
);

/**
 * Time-stamped occurrences: an email received, a reminder due, … A reminder the model schedules carries
 * an `idempotency_key` (source message + tool + arguments) so a re-run turn finds it instead of adding a
 * second one; events written by background functions leave it null.
 */
export const events = pgTable(
  "events",
  {
    id: id(),
    userId: userId(),
    kind: text("kind").notNull(),
    occurredAt: timestamp("occurred_at", { withTimezone: true }).notNull(),
    payload: jsonb("payload").$type<Record<string, unknown>>().notNull().default({}),
    entityIds: uuid("entity_ids").array().notNull().default(sql`'{}'::uuid[]`),
    status: text("status").notNull().default("recorded"),
    sourceId: uuid("source_id").references(() => sources.id, { onDelete: "set null" }),
    idempotencyKey: text("idempotency_key"),
    toldAt: toldAt(),
    createdAt: createdAt(),
  },
  (t) => [
    index("events_user_time_idx").on(t.userId, t.occurredAt),
    index("events_entity_ids_gin").using("gin", t.entityIds).with({ fastupdate: false }),
    uniqueIndex("events_user_idempotency_key_uq").on(t.userId, t.idempotencyKey),
  ],
);

/** Durable claims about the person, deduplicated by meaning; a changed claim supersedes the old one. */
export const facts = pgTable(
  "facts",
  {
    id: id(),
    userId: userId(),
    statement: text("statement").notNull(),
    category: text("category").notNull().default("general"),
    /** What the claim is about ("home city", "employer"): a newer claim on the same subject supersedes it. */
    subject: text("subject").notNull().default(""),
    confidence: real("confidence").notNull().default(0.5),
    embedding: embedding(),
    supersededBy: uuid("superseded_by"),
    /** Since when it holds, where the person said so ("I've lived in Berlin since 2019"). */
    happenedAt: timestamp("happened_at", { withTimezone: true }),
    /** 'extracted' by fact-extract, or 'correction': the person corrected a fact (fact_correct, PATCH /api/facts/:id). */
    origin: text("origin", { enum: ["extracted", "correction"] })
      .notNull()
      .default("extracted"),
    sourceId: uuid("source_id").references(() => sources.id, { onDelete: "set null" }),
    toldAt: toldAt(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    /** What recall matches words against: statement, subject and category, lowercase and accent-folded
     * (db/search-key.ts). Stored: translate() over every fact at each recall cost more than the rest of it. */
    searchKey: text("search_key").generatedAlwaysAs(folded("lower(statement || ' ' || subject || ' ' || category)")),
    search: tsvector("search").generatedAlwaysAs(
      sql`to_tsvector('simple'::regconfig, ${folded("lower(statement || ' ' || subject || ' ' || category)")})`,
    ),
    sketch: sketch(),
  },
  (t) => [
    index("facts_user_idx").on(t.userId),
    index("facts_user_subject_idx").on(t.userId, t.subject),
    check("facts_origin_check", sql`${t.origin} in ('extracted', 'correction')`),
    index("facts_embedding_hnsw").using("hnsw", t.embedding.op("vector_cosine_ops")),
    // A misspelled word no other retriever caught ("wegetarian"): word similarity through this index
    // instead of computed over every fact of the person (db/repositories/recall.ts).
    index("facts_user_search_key_trgm").using("gin", t.userId, t.searchKey.op("gin_trgm_ops")).with({ fastupdate: false }),
  ],
);

// ---------------------------------------------------------------------------------------------
// search: derived from public, written only by its trigger (migration 0025).
// ---------------------------------------------------------------------------------------------
export const search = pgSchema("search");

/**
 * What recall's words are matched against (migration 0025): each entity's name as a text search
 * vector (the same as entities.search) with what a question's scope is bounded by, one row per
 * entity, kept by a trigger on entities. No role but the owner reads it: the runtime role reaches it
 * only through search.name_matches(tsquery), which returns the matches of the person in app.user_id.
 * Row-level security kept `@@` from entities' GIN index where it cannot be marked LEAKPROOF (a managed
 * database's owner-only setup): there a question's words were matched in the person's list of words
 * (search.entity_words, migration 0023, dropped in 0026), intersecting lists of thousands of rows.
 * Here a GIN index does it, as the owner, in both setups.
 */
export const entityNames = search.table(
  "entity_names",
  {
    entityId: uuid("entity_id")
      .primaryKey()
      .references(() => entities.id, { onDelete: "cascade" }),
    /** The entity's person (its row goes with the entity's, which goes with theirs). */
    userId: uuid("user_id").notNull(),
    status: text("status").notNull(),
    type: text("type").notNull(),
    recallAt: timestamp("recall_at", { withTimezone: true }).notNull(),
    searchName: text("search_name").notNull(),
    search: tsvector("search").notNull(),
  },
  // fastupdate off and user_id first, as entities' own GIN indexes (a scan stays inside one person's rows).
  (t) => [index("entity_names_user_search_gin").using("gin", t.userId, t.search).with({ fastupdate: false })],
);

/** The seven user-data tables, in the order the RLS tests and setup checks walk them. */
export const USER_TABLES = ["users", "oauth_connections", "entities", "edges", "events", "facts", "sources"] as const;
export type UserTable = (typeof USER_TABLES)[number];
