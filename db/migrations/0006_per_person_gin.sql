DROP INDEX "entities_name_trgm";--> statement-breakpoint
DROP INDEX "entities_search_gin";--> statement-breakpoint
CREATE INDEX "entities_user_name_trgm" ON "entities" USING gin ("user_id","normalized_name" gin_trgm_ops) WITH (fastupdate=false);--> statement-breakpoint
CREATE INDEX "entities_user_search_gin" ON "entities" USING gin ("user_id","search") WITH (fastupdate=false);