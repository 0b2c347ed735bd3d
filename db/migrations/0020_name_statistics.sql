-- Planning a recall statement cost more than running parts of it: to estimate how many names match
-- `search_name % $question` (pg_trgm's similarity), the planner computes the question's similarity to
-- every most-common value and histogram bound of the column — 200 of them at the default statistics
-- target, ~1.7 ms of each recall statement's 3–5 ms of planning at 100k memories (perf on PostgreSQL
-- 15; bench:recall). Names are nearly unique, so those statistics told the planner little: with 10
-- the estimate is as good for the plans recall chooses between, and costs a tenth. The same for the
-- words of facts (`<%`, word_similarity). ANALYZE replaces the statistics already gathered.
ALTER TABLE "entities" ALTER COLUMN "search_name" SET STATISTICS 10;--> statement-breakpoint
ALTER TABLE "facts" ALTER COLUMN "search_key" SET STATISTICS 10;--> statement-breakpoint
ANALYZE "entities" ("search_name");--> statement-breakpoint
ANALYZE "facts" ("search_key");
