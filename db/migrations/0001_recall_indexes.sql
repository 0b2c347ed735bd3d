DROP INDEX "entities_user_type_idx";--> statement-breakpoint
CREATE INDEX "entities_user_type_idx" ON "entities" USING btree ("user_id","type","updated_at");