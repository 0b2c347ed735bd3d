-- Time in memory and names in every language (issue 13). entities.search_name is the name with accents
-- folded (db/search-key.ts); the full-text vector is built from it too, so "cien anos" finds "Cien años".
-- told_at is when the person told it: backfilled from the source message's time, else the row's
-- creation. happened_at is only ever what the person said. The backfill runs with row-level security
-- not forced (the owner would otherwise see no rows; db/sql/0200_rls.sql forces it again on every setup)
-- and without the updated_at triggers (a backfill is not a touch: recency must not change).
DROP INDEX "entities_user_name_trgm";--> statement-breakpoint
ALTER TABLE "entities" drop column "search";--> statement-breakpoint
ALTER TABLE "entities" ADD COLUMN "search" "tsvector" GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, translate(normalized_name, 'àáâãäåçèéêëìíîïñòóôõöùúûüýÿāăąćĉċčďēĕėęěĝğġģĥĩīĭįĳĵķĺļľŀńņňōŏőŕŗřśŝşšţťũūŭůűųŵŷźżžơưǆǉǌǎǐǒǔǖǘǚǜǟǡǧǩǫǭǰǳǵǹǻȁȃȅȇȉȋȍȏȑȓȕȗșțȟȧȩȫȭȯȱȳøđłħıё', 'aaaaaaceeeeiiiinooooouuuuyyaaaccccdeeeeegggghiiiiijkllllnnnooorrrssssttuuuuuuwyzzzoudlnaiouuuuuaagkoojdgnaaaeeiioorruusthaeooooyodlhiе') || ' ' || type)) STORED;--> statement-breakpoint
ALTER TABLE "entities" ADD COLUMN "search_name" text GENERATED ALWAYS AS (translate(normalized_name, 'àáâãäåçèéêëìíîïñòóôõöùúûüýÿāăąćĉċčďēĕėęěĝğġģĥĩīĭįĳĵķĺļľŀńņňōŏőŕŗřśŝşšţťũūŭůűųŵŷźżžơưǆǉǌǎǐǒǔǖǘǚǜǟǡǧǩǫǭǰǳǵǹǻȁȃȅȇȉȋȍȏȑȓȕȗșțȟȧȩȫȭȯȱȳøđłħıё', 'aaaaaaceeeeiiiinooooouuuuyyaaaccccdeeeeegggghiiiiijkllllnnnooorrrssssttuuuuuuwyzzzoudlnaiouuuuuaagkoojdgnaaaeeiioorruusthaeooooyodlhiе')) STORED;--> statement-breakpoint
ALTER TABLE "entities" ADD COLUMN "told_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "entities" ADD COLUMN "happened_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "told_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "facts" ADD COLUMN "origin" text DEFAULT 'extracted' NOT NULL;--> statement-breakpoint
ALTER TABLE "facts" ADD COLUMN "told_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
CREATE INDEX "entities_user_when_idx" ON "entities" USING btree ("user_id",coalesce("happened_at", "told_at"));--> statement-breakpoint
CREATE INDEX "entities_user_name_trgm" ON "entities" USING gin ("user_id","search_name" gin_trgm_ops) WITH (fastupdate=false);--> statement-breakpoint
ALTER TABLE "facts" ADD CONSTRAINT "facts_origin_check" CHECK ("facts"."origin" in ('extracted', 'correction'));--> statement-breakpoint
CREATE INDEX "entities_user_search_gin" ON "entities" USING gin ("user_id","search") WITH (fastupdate=false);--> statement-breakpoint
ALTER TABLE "entities" NO FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "events" NO FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "facts" NO FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "sources" NO FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "entities" DISABLE TRIGGER USER;--> statement-breakpoint
ALTER TABLE "events" DISABLE TRIGGER USER;--> statement-breakpoint
ALTER TABLE "facts" DISABLE TRIGGER USER;--> statement-breakpoint
UPDATE "entities" AS e SET "told_at" = coalesce((SELECT s."created_at" FROM "sources" s WHERE s."id" = e."source_id"), e."created_at");--> statement-breakpoint
UPDATE "events" AS e SET "told_at" = coalesce((SELECT s."created_at" FROM "sources" s WHERE s."id" = e."source_id"), e."created_at");--> statement-breakpoint
UPDATE "facts" AS f SET "told_at" = coalesce((SELECT s."created_at" FROM "sources" s WHERE s."id" = f."source_id"), f."created_at");--> statement-breakpoint
ALTER TABLE "entities" ENABLE TRIGGER USER;--> statement-breakpoint
ALTER TABLE "events" ENABLE TRIGGER USER;--> statement-breakpoint
ALTER TABLE "facts" ENABLE TRIGGER USER;--> statement-breakpoint
ALTER TABLE "entities" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "events" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "facts" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "sources" FORCE ROW LEVEL SECURITY;
