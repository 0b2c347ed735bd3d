-- Recall's words where row-level security keeps `@@` from the GIN index (issue 28): a managed
-- database's owner-only setup cannot mark it LEAKPROOF (db/sql/0400_planner.sql), so a word question
-- checked the name of every memory in its scope with strpos (19 ms at 100k memories). Every whole word
-- of an entity's name and type (the weight-A lexemes of entities.search) is a row here, kept by the
-- trigger below; `=` and ranges of text are leakproof, so the (user_id, word) btree reaches them under
-- the policy (db/sql/0200_rls.sql), and a word's beginning is a range of the "C" collation's byte order.
-- The trigger runs as the owner (SECURITY DEFINER): the runtime role may read the words (db/sql/0100_roles.sql)
-- but never write them, and a write to entities keeps working whichever of the setup's steps has run
-- (the policies come with db/sql/0200_rls.sql). It is created before the rows are copied: it locks
-- entities against writes until the migration commits, so no memory is written between the copy and
-- the trigger. The copy reads every person's entities as the owner (row-level security set aside for
-- it, as in 0008).
CREATE SCHEMA IF NOT EXISTS "search";--> statement-breakpoint
CREATE TABLE "search"."entity_words" (
	"user_id" uuid NOT NULL,
	"word" text COLLATE "C" NOT NULL,
	"entity_id" uuid NOT NULL
);--> statement-breakpoint
CREATE FUNCTION "search"."entity_words_sync"() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  IF tg_op = 'UPDATE' THEN
    IF new.search IS NOT DISTINCT FROM old.search AND new.user_id = old.user_id THEN
      RETURN NULL;
    END IF;
    DELETE FROM search.entity_words WHERE entity_id = old.id;
  END IF;
  INSERT INTO search.entity_words (user_id, word, entity_id)
    SELECT new.user_id, l.lexeme, new.id FROM unnest(new.search) l WHERE 'A' = ANY (l.weights);
  RETURN NULL;
END $$;--> statement-breakpoint
REVOKE ALL ON FUNCTION "search"."entity_words_sync"() FROM PUBLIC;--> statement-breakpoint
CREATE TRIGGER "entities_words" AFTER INSERT OR UPDATE OF "user_id", "normalized_name", "type" ON "public"."entities"
  FOR EACH ROW EXECUTE FUNCTION "search"."entity_words_sync"();--> statement-breakpoint
ALTER TABLE "entities" NO FORCE ROW LEVEL SECURITY;--> statement-breakpoint
INSERT INTO "search"."entity_words" ("user_id", "word", "entity_id")
  SELECT e.user_id, l.lexeme, e.id FROM "public"."entities" e, unnest(e.search) l WHERE 'A' = ANY (l.weights);--> statement-breakpoint
ALTER TABLE "entities" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "search"."entity_words" ADD CONSTRAINT "entity_words_entity_id_word_pk" PRIMARY KEY("entity_id","word");--> statement-breakpoint
ALTER TABLE "search"."entity_words" ADD CONSTRAINT "entity_words_entity_id_entities_id_fk" FOREIGN KEY ("entity_id") REFERENCES "public"."entities"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "entity_words_user_word_idx" ON "search"."entity_words" USING btree ("user_id","word","entity_id");
