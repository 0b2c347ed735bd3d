-- Where each kind of message Soma sends on its own goes (reminders, the morning brief, the weekly
-- review, a reply finished while the person was away): Telegram, push, or both. Kept with the person's
-- other settings in auth.users and mirrored into public.users (db/sql/0300_triggers.sql).
ALTER TABLE "auth"."users" ADD COLUMN "notify" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "notify" jsonb DEFAULT '{}'::jsonb NOT NULL;