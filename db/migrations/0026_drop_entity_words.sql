-- What recall read before migration 0025 and no release since reads: search.entity_words (every whole
-- word of each memory's name and type, 1.3 GB with its indexes at a million memories), the trigger
-- that kept it, and entities' own GIN index of the name vector (48 MB). Recall matches words in
-- search.entity_names (0025); the release before this one, the one a rollback returns to, reads neither.
-- Each memory written no longer writes its words and their index entries: 5,000 inserts in one
-- statement took 1.45-2.1 s with them and 0.8 s without, on PostgreSQL 15 at a million memories.
DROP TRIGGER "entities_words" ON "public"."entities";--> statement-breakpoint
DROP FUNCTION "search"."entity_words_sync"();--> statement-breakpoint
DROP TABLE "search"."entity_words";--> statement-breakpoint
DROP INDEX "entities_user_search_gin";
