-- Where row-level security keeps `@@` from the word index (a managed database's owner-only setup), a
-- word question in a window first finds the names holding every word in a covering index, checking
-- each name and type with strpos (db/repositories/recall.ts). The window's own index, (user, recall_at),
-- did not carry the type, so the planner read the person's (user, type, recall_at) index instead,
-- whose window is not a range: all 100k entries of a person for a month's 6,850 (10.6 ms; a year's
-- 33 ms). The window's index now carries the type too.
DROP INDEX IF EXISTS "entities_user_recall_at_idx";--> statement-breakpoint
CREATE INDEX "entities_user_recall_at_idx" ON "entities" USING btree ("user_id","recall_at") INCLUDE ("status","id","sketch","search_name","type");
