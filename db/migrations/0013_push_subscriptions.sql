-- Web Push subscriptions are a person's connections to their browsers' push services: rows of
-- oauth_connections with provider 'webpush:<sha-256 of the endpoint>' (the endpoint and its keys
-- sealed with TOKEN_ENCRYPTION_KEY in access_token_enc), so the schema keeps its seven tables and the
-- rows their row-level security. A device's label and when it was last pushed to are new columns.
ALTER TABLE "oauth_connections" ADD COLUMN "label" text;--> statement-breakpoint
ALTER TABLE "oauth_connections" ADD COLUMN "last_used_at" timestamp with time zone;