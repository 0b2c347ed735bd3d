-- Idempotency keys for a turn's writes (agents/idempotency.ts: source message + tool + arguments), so a
-- turn re-run after a crash finds its reminder and edge instead of adding second ones. Nullable: existing
-- rows and background writes keep null, and nulls never collide in a unique index, so this applies to a
-- database that already holds duplicate edges or events without touching them.
ALTER TABLE "edges" ADD COLUMN "idempotency_key" text;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "idempotency_key" text;--> statement-breakpoint
CREATE UNIQUE INDEX "edges_user_idempotency_key_uq" ON "edges" USING btree ("user_id","idempotency_key");--> statement-breakpoint
CREATE UNIQUE INDEX "events_user_idempotency_key_uq" ON "events" USING btree ("user_id","idempotency_key");