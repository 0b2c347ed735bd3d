-- Recall's words matched by a GIN index in every setup (issue 28). Row-level security keeps `@@` from
-- entities' GIN index where it cannot be marked LEAKPROOF (a managed database's owner-only setup,
-- db/sql/0400_planner.sql): there a question's words were found by intersecting the person's lists of
-- words (search.entity_words, migration 0023), 9 ms for two common words at 100k memories, and every
-- match was then read by id (3 ms for 506). Here each entity's name vector (the same as
-- entities.search) and what a question's scope is bounded by are one row, kept by the trigger below,
-- and no role but the owner reads the table: the runtime role reaches it only through
-- search.name_matches(tsquery), which answers for the person in app.user_id alone (the same setting the
-- policies read, db/sql/0200_rls.sql), as the owner, so that its `@@` is an index condition. Recall
-- then reads no entity to rank its words' matches (db/repositories/recall.ts).
--
-- search.entity_words and entities' own GIN index stay, and the words are still written: the release
-- before this one reads them, and it must keep working between this migration and the deploy, and
-- after a rollback to it. A later release drops them.
--
-- The trigger runs as the owner (SECURITY DEFINER) and writes only the row the statement wrote. It is
-- created before the rows are copied: it locks entities against writes until the migration commits, so
-- no memory is written between the copy and the trigger. The copy reads every person's entities as the
-- owner (row-level security set aside for it, as in 0008 and 0023).
CREATE TABLE "search"."entity_names" (
	"entity_id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"status" text NOT NULL,
	"type" text NOT NULL,
	"recall_at" timestamp with time zone NOT NULL,
	"search_name" text NOT NULL,
	"search" "tsvector" NOT NULL
);--> statement-breakpoint
CREATE FUNCTION "search"."entity_names_sync"() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  INSERT INTO search.entity_names AS n (entity_id, user_id, status, type, recall_at, search_name, search)
    VALUES (new.id, new.user_id, new.status, new.type, new.recall_at, new.search_name, new.search)
    ON CONFLICT (entity_id) DO UPDATE SET user_id = excluded.user_id, status = excluded.status, type = excluded.type,
      recall_at = excluded.recall_at, search_name = excluded.search_name, search = excluded.search
    WHERE (n.user_id, n.status, n.type, n.recall_at, n.search_name, n.search)
      IS DISTINCT FROM (excluded.user_id, excluded.status, excluded.type, excluded.recall_at, excluded.search_name, excluded.search);
  RETURN NULL;
END $$;--> statement-breakpoint
REVOKE ALL ON FUNCTION "search"."entity_names_sync"() FROM PUBLIC;--> statement-breakpoint
CREATE TRIGGER "entities_names" AFTER INSERT OR UPDATE OF "user_id", "normalized_name", "type", "status", "told_at", "happened_at"
  ON "public"."entities" FOR EACH ROW EXECUTE FUNCTION "search"."entity_names_sync"();--> statement-breakpoint
ALTER TABLE "entities" NO FORCE ROW LEVEL SECURITY;--> statement-breakpoint
INSERT INTO "search"."entity_names" ("entity_id", "user_id", "status", "type", "recall_at", "search_name", "search")
  SELECT e.id, e.user_id, e.status, e.type, e.recall_at, e.search_name, e.search FROM "public"."entities" e;--> statement-breakpoint
ALTER TABLE "entities" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "search"."entity_names" ADD CONSTRAINT "entity_names_entity_id_entities_id_fk" FOREIGN KEY ("entity_id") REFERENCES "public"."entities"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "entity_names_user_search_gin" ON "search"."entity_names" USING gin ("user_id","search") WITH (fastupdate=false);--> statement-breakpoint
-- Not forced: the owner (this function's) is not held to it; with no policy every other role is refused.
ALTER TABLE "search"."entity_names" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
-- The person's (app.user_id's) memories whose name matches `q`, with what bounds a question's scope.
-- Only the person in the setting: the runtime role may set it, as it sets it for every policy.
CREATE FUNCTION "search"."name_matches"(q tsquery)
  RETURNS TABLE (id uuid, status text, type text, recall_at timestamptz, search_name text, rank real)
  LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
  AS $$
    SELECT n.entity_id, n.status, n.type, n.recall_at, n.search_name, ts_rank(n.search, q)
    FROM search.entity_names n
    WHERE n.user_id = nullif(current_setting('app.user_id', true), '')::uuid AND n.search @@ q
  $$;--> statement-breakpoint
REVOKE ALL ON FUNCTION "search"."name_matches"(tsquery) FROM PUBLIC;
