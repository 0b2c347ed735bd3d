DROP INDEX "entities_name_trgm";--> statement-breakpoint
DROP INDEX "entities_search_gin";--> statement-breakpoint
DROP INDEX "events_entity_ids_gin";--> statement-breakpoint
CREATE INDEX "entities_name_trgm" ON "entities" USING gin ("normalized_name" gin_trgm_ops) WITH (fastupdate=false);--> statement-breakpoint
CREATE INDEX "entities_search_gin" ON "entities" USING gin ("search") WITH (fastupdate=false);--> statement-breakpoint
CREATE INDEX "events_entity_ids_gin" ON "events" USING gin ("entity_ids") WITH (fastupdate=false);