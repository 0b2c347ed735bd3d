-- Step 1 of `npm run db:setup`, before any migration: the schema uses vector(1024), gin_trgm_ops and
-- uuid_generate_v4(). Idempotent.
create extension if not exists vector;
create extension if not exists pg_trgm;
create extension if not exists "uuid-ossp";
