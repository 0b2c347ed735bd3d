-- Recall at scale (db/repositories/recall.ts). A time window's embeddings are read by their signs first: a
-- 128-byte sketch kept in the row (the 4 kB embedding lives out of line, and reading it for every row of a
-- busy week cost ~6 µs a row). A type's window comes straight from an index. A misspelled word in a
-- fact is looked up through a trigram index instead of scoring every fact. The sketches are generated
-- columns: nothing writes them.
ALTER TABLE "entities" ADD COLUMN "sketch" bit(1024) GENERATED ALWAYS AS (binary_quantize(embedding)::bit(1024)) STORED;--> statement-breakpoint
ALTER TABLE "facts" ADD COLUMN "sketch" bit(1024) GENERATED ALWAYS AS (binary_quantize(embedding)::bit(1024)) STORED;--> statement-breakpoint
CREATE INDEX "entities_user_type_recall_at_idx" ON "entities" USING btree ("user_id","type","recall_at");--> statement-breakpoint
CREATE INDEX "facts_user_search_key_trgm" ON "facts" USING gin ("user_id","search_key" gin_trgm_ops) WITH (fastupdate=false);