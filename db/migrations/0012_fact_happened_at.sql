-- Since when a fact holds, where the person said so ("I've lived in Berlin since 2019"): recall bounds facts
-- by it (else by when they were told), and the profile in every prompt shows it.
ALTER TABLE "facts" ADD COLUMN "happened_at" timestamp with time zone;