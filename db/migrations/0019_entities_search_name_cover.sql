-- Recall under row-level security where full-text matching cannot be marked LEAKPROOF (a managed
-- database's owner-only setup, db/sql/0400_planner.sql): `@@` may then only run after the policy, so
-- the GIN index is of no use and every one of the person's rows was read and matched (104 ms at 100k
-- memories). db/repositories/recall.ts finds the rows whose name or type holds every lexeme of the
-- question (each is a substring of them) in this index first, index-only (17 ms at 100k), and matches
-- only those. The key columns are the ones the index had (db/schema.ts names them; drizzle cannot
-- express INCLUDE).
DROP INDEX IF EXISTS "entities_user_search_name_idx";--> statement-breakpoint
CREATE INDEX "entities_user_search_name_idx" ON "entities" USING btree ("user_id","search_name") INCLUDE ("status","type","id");
