ALTER TABLE "facts" ADD COLUMN "subject" text DEFAULT '' NOT NULL;--> statement-breakpoint
CREATE INDEX "facts_user_subject_idx" ON "facts" USING btree ("user_id","subject");