-- Recall ranks a scope of up to SCOPE_ROWS memories (a person, a type, a window: db/repositories/recall.ts)
-- by the sketches of its rows. With the sketch, the name and what the scope filters on in the index, the ranking
-- is an index-only scan: 7,000 rows of a month at 100k memories in 4 ms, where reading the rows
-- (each 4 KB of embedding beside its sketch) or walking the shared HNSW index with the window as its
-- filter took 80 ms. The key columns are the ones these indexes had (db/schema.ts names them; drizzle
-- cannot express INCLUDE).
DROP INDEX IF EXISTS "entities_user_recall_at_idx";--> statement-breakpoint
CREATE INDEX "entities_user_recall_at_idx" ON "entities" USING btree ("user_id","recall_at") INCLUDE ("status","id","sketch","search_name");--> statement-breakpoint
DROP INDEX IF EXISTS "entities_user_type_recall_at_idx";--> statement-breakpoint
CREATE INDEX "entities_user_type_recall_at_idx" ON "entities" USING btree ("user_id","type","recall_at") INCLUDE ("status","id","sketch","search_name");
