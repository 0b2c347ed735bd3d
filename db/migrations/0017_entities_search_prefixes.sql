-- Recall's full text (db/repositories/recall.ts, issue 28): a name's words (weight A) and every word's
-- beginnings from two letters (weight D) are lexemes of its tsvector, so that the word the person may
-- still be typing and a long word's stem match as one lexeme of the GIN index, and a whole word
-- (word:A) only a word. As prefix queries (atlas:*) they gathered every person's words of that
-- beginning into a bitmap first: 17-33 ms at 100k memories, against 2 ms. Immutable (a generated
-- column's function), pg_catalog only whatever the search_path of whoever writes the row. Adding the
-- column rewrites the table and rebuilds its indexes, once: at a million memories the HNSW index takes
-- ~9 minutes with maintenance_work_mem 8GB, far longer with the default 64MB (the setup's URL may carry
-- a setting for its own session: DATABASE_URL="postgres://…?maintenance_work_mem=2GB" npm run db:setup).
CREATE OR REPLACE FUNCTION public.name_search_vector(doc text) RETURNS tsvector
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  SET search_path = pg_catalog, pg_temp
  AS $$
    -- The beginnings get a position, in tsvector's literal form: a lexeme without one matches any
    -- weight, whole-word queries included.
    SELECT setweight(v, 'A') || coalesce((
      SELECT string_agg(DISTINCT '''' || replace(replace(left(l.lexeme, n), '\', '\\'), '''', '''''') || ''':1', ' ')
      FROM unnest(v) l, generate_series(2, char_length(l.lexeme) - 1) n)::tsvector, ''::tsvector)
    FROM to_tsvector('simple'::regconfig, doc) v
  $$;--> statement-breakpoint
ALTER TABLE "entities" drop column "search";--> statement-breakpoint
ALTER TABLE "entities" ADD COLUMN "search" "tsvector" GENERATED ALWAYS AS (name_search_vector(translate(normalized_name, 'àáâãäåçèéêëìíîïñòóôõöùúûüýÿāăąćĉċčďēĕėęěĝğġģĥĩīĭįĳĵķĺļľŀńņňōŏőŕŗřśŝşšţťũūŭůűųŵŷźżžơưǆǉǌǎǐǒǔǖǘǚǜǟǡǧǩǫǭǰǳǵǹǻȁȃȅȇȉȋȍȏȑȓȕȗșțȟȧȩȫȭȯȱȳøđłħıё', 'aaaaaaceeeeiiiinooooouuuuyyaaaccccdeeeeegggghiiiiijkllllnnnooorrrssssttuuuuuuwyzzzoudlnaiouuuuuaagkoojdgnaaaeeiioorruusthaeooooyodlhiе') || ' ' || type)) STORED;--> statement-breakpoint
CREATE INDEX "entities_user_search_gin" ON "entities" USING gin ("user_id","search") WITH (fastupdate=false);
