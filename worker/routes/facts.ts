// The web app's facts — what Soma believes about the person (session required):
//   GET    /api/facts         {current, superseded}: current ones most confident first, the history
//                             newest first; each {id, statement, category, subject, confidence, origin,
//                             supersededBy, toldAt, updatedAt, source: {kind, excerpt, at} | null}
//   PATCH  /api/facts/:id     {statement?, category?}: the person corrects a current fact. The correction
//                             is a new fact (origin "correction", confidence 1) that supersedes the old
//                             one, which stays as history — as when they say it in the chat. 200
//                             {fact, replaces} (replaces: null when nothing changed); 409 for a fact
//                             already superseded (the body names the current one)
//   DELETE /api/facts/:id     deletes the fact and the history behind it: never in a prompt, a recall or
//                             a list again. 200 {deleted: true}
// An id that is not a UUID is 400; one that is not the person's (RLS hides the rest) or no longer
// exists is 404. PATCH and DELETE need a same-origin request. A valid PATCH is counted against the
// person's per-minute "edit" budget before its work (a correction embeds; worker/rate-budget.ts).
import { Hono } from "hono";
import { z } from "zod";
import { FACT_CATEGORIES } from "../../agents/fact-extraction";
import { createEmbedder, embedOne } from "../../agents/integrations/model/embeddings";
import { correctFact, deleteFact, listFacts } from "../../db/repositories/facts";
import { requireSameOrigin } from "../auth/origin";
import { requireSession } from "../auth/session";
import { limitBody } from "../body-limit";
import { ApiError } from "../errors";
import { spendBudget } from "../rate-budget";
import type { AppEnv } from "../types";
import { readJson } from "../validation";

/** Facts a list holds at most. */
const LISTED = 500;

const Correction = z
  .strictObject({
    statement: z.string().trim().min(3, "a fact has at least 3 characters").max(300).optional(),
    category: z.enum(FACT_CATEGORIES).optional(),
  })
  .refine((body) => body.statement !== undefined || body.category !== undefined, "give statement, category or both");

/** A correction's body, as the web app sends it (web/src/api.ts types its client with it). */
export type FactCorrection = z.input<typeof Correction>;

function factId(raw: string): string {
  const id = z.uuid().safeParse(raw);
  if (!id.success) throw new ApiError("bad_request", "Fact ids are UUIDs.");
  return id.data;
}

export const facts = new Hono<AppEnv>()
  .use(requireSession("reject"))
  .get("/", async (c) => {
    const all = await c.var.db.withUser(c.var.person.id, (tx) => listFacts(tx, { history: true, limit: LISTED }));
    return c.json({ current: all.filter((f) => f.supersededBy === null), superseded: all.filter((f) => f.supersededBy !== null) });
  })
  .patch("/:id", requireSameOrigin, limitBody(4096), async (c) => {
    const id = factId(c.req.param("id"));
    const change = await readJson(c, Correction);
    await spendBudget(c, "edit");
    const userId = c.var.person.id;
    const embedding = change.statement === undefined ? null : await embedOne(createEmbedder(c.var.config, c.env), change.statement);
    const result = await c.var.db.withUser(userId, (tx) => correctFact(tx, userId, id, { ...change, embedding, sourceId: null }));
    switch (result.outcome) {
      case "not_found":
        throw new ApiError("not_found", "No such fact.");
      case "superseded":
        throw new ApiError("conflict", `This fact was already replaced; correct the current one (${result.currentId}).`);
      case "unchanged":
        return c.json({ fact: result.fact, replaces: null });
      case "corrected":
        return c.json({ fact: result.fact, replaces: result.supersededId });
    }
  })
  .delete("/:id", requireSameOrigin, async (c) => {
    const id = factId(c.req.param("id"));
    const deleted = await c.var.db.withUser(c.var.person.id, (tx) => deleteFact(tx, id));
    if (!deleted) throw new ApiError("not_found", "No such fact.");
    return c.json({ deleted: true });
  });
