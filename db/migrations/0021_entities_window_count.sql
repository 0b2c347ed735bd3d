-- How many memories a window holds decides how recall ranks them (db/repositories/recall.ts: at most
-- SCOPE_ROWS by their sketches, more through HNSW), counted up to SCOPE_ROWS + 1 on every time-bounded
-- question. Counted in the covering (user, recall_at) index, whose entries carry the sketch and the name
-- (~200 bytes), that took 2.2 ms of a month's 6,851 rows and 3.5 ms of a year's at 100k memories; in this
-- index's narrow entries 1.0 and 1.7 (PostgreSQL 15, bench:recall). It replaces (user, status), which
-- it also serves as its prefix.
DROP INDEX "entities_user_status_idx";--> statement-breakpoint
CREATE INDEX "entities_user_status_recall_at_idx" ON "entities" USING btree ("user_id","status","recall_at");