-- Let the recall query use its indexes under row-level security. Two facts about the planner:
--
-- 1. pgvector declares its distance functions with the default cost of 1, i.e. as cheap as an integer
--    comparison; for 1024 dimensions that is off by two orders of magnitude, and the planner then
--    prefers reading all of a person's rows through a btree and sorting them over walking the HNSW
--    index (measured on the embedded Postgres: 95 ms vs 3 ms at 10k entities).
-- 2. Under RLS, a query's own conditions may only run before the policy's if their functions are
--    LEAKPROOF (they cannot reveal rows the policy hides). The full-text match (@@) and trigram
--    similarity (%, <%) are not marked so, which rules out their GIN indexes for every non-owner role:
--    each recall read all of the person's rows (700 ms at 100k). Both functions are total — no
--    error, no side effect, whatever the input — so marking them leakproof is sound. The GIN indexes
--    lead with user_id (btree_gin), so a scan never reaches another person's rows (migration 0006).
--
-- Costs need the functions' owner, LEAKPROOF a superuser; managed databases may refuse either. Each
-- statement therefore stands alone: one that is not allowed is skipped with a notice and the others
-- still apply. Recall stays correct without them, only slower at scale.
create or replace function pg_temp.tune_recall_function(statement text) returns void
  language plpgsql
  as $$
begin
  execute statement;
exception when insufficient_privilege then
  raise notice 'skipped (%): %', sqlerrm, statement;
end $$;

select pg_temp.tune_recall_function(statement) from (values
  ('alter function cosine_distance(vector, vector) cost 500'),
  ('alter function similarity(text, text) cost 200'),
  ('alter function similarity_op(text, text) cost 200'),
  ('alter function similarity_op(text, text) leakproof'),
  ('alter function word_similarity_op(text, text) cost 200'),
  ('alter function word_similarity_op(text, text) leakproof'),
  ('alter function ts_match_vq(tsvector, tsquery) leakproof')
) as tuning(statement);
