// Memories stored without an embedding, and their embeddings once computed. An import writes none (the
// file carries no vectors) and every other writer stores null when the embedder fails, and such a row is
// invisible to vector recall until it gets one: memory-consolidate (agents/workflows) fills them in.
// Both functions take a transaction Database.withUser opened (row-level security scopes it to one person).
import { sql } from "drizzle-orm";
import { sqlRows, type Tx } from "../database";
import { vectorLiteral } from "./recall-shared";

type EmbeddedTable = "entities" | "facts";

export interface MissingEmbedding {
  table: EmbeddedTable;
  id: string;
  /** What the row's writer embeds: `${type}: ${name}` for an entity (memory_capture), the statement for a fact. */
  text: string;
}

/** Up to `limit` of the person's active entities and current facts without an embedding, oldest first. */
export async function missingEmbeddings(tx: Tx, userId: string, limit: number): Promise<MissingEmbedding[]> {
  // user_id = <constant> besides the policy: the planner then knows it is one person's rows (recall.ts).
  const rows = await sqlRows<MissingEmbedding>(
    tx,
    sql`
    select "table", id, text from (
      select 'entities' as "table", id, type || ': ' || name as text, created_at
      from entities where user_id = ${userId} and status = 'active' and embedding is null
      union all
      select 'facts', id, statement, created_at
      from facts where user_id = ${userId} and superseded_by is null and embedding is null
    ) missing
    order by created_at, id
    limit ${limit}`,
  );
  return rows.map(({ table, id, text }) => ({ table, id, text }));
}

/**
 * Stores each row's embedding where the row still has none and still says the text that was embedded
 * (a writer that embedded it meanwhile, or renamed it, knows newer words than the ones embedded here);
 * returns how many it stored. One statement for any number of rows: they travel as one jsonb parameter,
 * each vector in pgvector's text form. It leaves updated_at alone (db/sql/0300_triggers.sql).
 */
export async function storeEmbeddings(tx: Tx, rows: Array<MissingEmbedding & { embedding: number[] }>): Promise<number> {
  if (rows.length === 0) return 0;
  const input = JSON.stringify(rows.map((r) => ({ table: r.table, id: r.id, text: r.text, embedding: vectorLiteral(r.embedding) })));
  const [result] = await sqlRows<{ stored: number }>(
    tx,
    sql`
    with input as (select * from jsonb_to_recordset(${input}::jsonb) as x("table" text, id uuid, text text, embedding text)),
    entity_rows as (
      update entities t set embedding = input.embedding::vector from input
      where input."table" = 'entities' and t.id = input.id and t.embedding is null
        and t.type || ': ' || t.name = input.text returning t.id),
    fact_rows as (
      update facts t set embedding = input.embedding::vector from input
      where input."table" = 'facts' and t.id = input.id and t.embedding is null and t.statement = input.text returning t.id)
    select ((select count(*) from entity_rows) + (select count(*) from fact_rows))::int as stored`,
  );
  return result?.stored ?? 0;
}
