-- The hourly fan-outs (the morning brief, the weekly review) read the people of the zones where it is
-- that hour through this index, instead of computing every person's local time.
CREATE INDEX "users_timezone_idx" ON "users" USING btree ("timezone");