-- Planner costs for the recall query. pgvector declares its distance functions with the default
-- cost of 1, i.e. as cheap as an integer comparison; for 1024 dimensions that is off by two orders
-- of magnitude, and with row-level security adding "user_id = …" to every scan the planner then
-- prefers reading all of a person's rows through the btree and sorting them over walking the HNSW
-- index (measured: 95 ms vs 3 ms at 10k entities). Telling it the truth fixes the plan.
-- Managed databases may not let the setup role alter extension functions: then this is skipped
-- with a notice and recall stays correct, only slower at scale.
do $$
begin
  alter function cosine_distance(vector, vector) cost 500;
  alter function similarity(text, text) cost 200;
  alter function similarity_op(text, text) cost 200;
exception when insufficient_privilege then
  raise notice 'not allowed to tune extension function costs; recall plans keep the defaults';
end $$;
