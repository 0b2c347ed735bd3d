-- When a memory counts as being from (happened, else told) as a stored column with its own index. Under
-- row-level security a query's own conditions reach an index only when they are leakproof, and a
-- comparison of coalesce(happened_at, told_at) is not: every time-bounded recall read all of the
-- person's rows (a sequential scan at 100k). A comparison of a plain timestamptz column is.
DROP INDEX "entities_user_when_idx";--> statement-breakpoint
ALTER TABLE "entities" ADD COLUMN "recall_at" timestamp with time zone GENERATED ALWAYS AS (coalesce(happened_at, told_at)) STORED;--> statement-breakpoint
CREATE INDEX "entities_user_recall_at_idx" ON "entities" USING btree ("user_id","recall_at");