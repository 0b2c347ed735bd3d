-- The person's words (migration 0023) found a question's words where row-level security kept `@@` from
-- entities' GIN index; search.entity_names (0025) does it with a GIN index in every setup. Their
-- trigger goes first, so that no write to entities reaches a table that is gone.
DROP TRIGGER "entities_words" ON "public"."entities";--> statement-breakpoint
DROP FUNCTION "search"."entity_words_sync"();--> statement-breakpoint
DROP TABLE "search"."entity_words" CASCADE;
