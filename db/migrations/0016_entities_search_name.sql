-- Recall's exact-name retriever (db/repositories/recall.ts, issue 28): a name that is the question itself
-- is found through this index, whatever its full-text rank among hundreds of names with the same words.
CREATE INDEX "entities_user_search_name_idx" ON "entities" USING btree ("user_id","search_name");