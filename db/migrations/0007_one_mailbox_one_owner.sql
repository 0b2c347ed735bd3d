-- A mailbox has one owner (issue 12, 9g): its mail pushes are routed to them. The check before saving a
-- connection left a race (two people connecting the same mailbox at once); this index closes it. A
-- database that already holds a mailbox connected by two people keeps the first connection and drops
-- the later ones (their owners are told "already connected to another Soma account" when they retry).
-- Row-level security is forced on this table: for the owner running the setup it would hide every row
-- (no app.user_id), so it is lifted for the clean-up and forced again right after (0200_rls.sql forces
-- it on every setup too).
ALTER TABLE "oauth_connections" NO FORCE ROW LEVEL SECURITY;--> statement-breakpoint
DELETE FROM "oauth_connections" AS later
  USING "oauth_connections" AS first
  WHERE later."provider" = first."provider"
    AND lower(later."account_email") = lower(first."account_email")
    AND (later."created_at", later."id") > (first."created_at", first."id");--> statement-breakpoint
ALTER TABLE "oauth_connections" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
DROP INDEX "oauth_connections_account_email_idx";--> statement-breakpoint
CREATE UNIQUE INDEX "oauth_connections_provider_account_email_uq" ON "oauth_connections" USING btree ("provider",lower("account_email"));
