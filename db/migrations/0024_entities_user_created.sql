-- The memory center (GET /api/memories) and MCP's list_memories page through a person's memories newest
-- learned first, by (created_at, id) (db/repositories/memory-center.ts). No index held that order: every
-- page read all of the person's active memories and sorted them, 43 ms for the first 20 of 100k on
-- PostgreSQL 15 (more on the embedded Postgres). In this index a page is its entries read backwards from
-- the cursor.
CREATE INDEX "entities_user_created_idx" ON "entities" USING btree ("user_id","created_at","id");
