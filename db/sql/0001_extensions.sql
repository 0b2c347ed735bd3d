-- Step 1 of `npm run db:setup`, before any migration: the schema uses vector(1024), gin_trgm_ops,
-- uuid_generate_v4() and, for GIN indexes that lead with user_id, btree_gin (a trusted contrib
-- extension on PostgreSQL 13+, so a managed database's owner may create it). Idempotent.
create extension if not exists vector;
create extension if not exists pg_trgm;
create extension if not exists "uuid-ossp";
create extension if not exists btree_gin;
