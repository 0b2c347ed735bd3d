-- Account tombstones (a day after a deletion, no door recreates the person) and the once-a-day
-- "I only talk in private chats" notice per group chat. Both in auth: only soma_auth touches them.
CREATE TABLE "auth"."deleted_people" (
	"identity_hash" text PRIMARY KEY NOT NULL,
	"deleted_at" timestamp with time zone DEFAULT now() NOT NULL,
	"notified_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "auth"."group_chat_notices" (
	"chat_id" bigint PRIMARY KEY NOT NULL,
	"notified_at" timestamp with time zone DEFAULT now() NOT NULL
);
