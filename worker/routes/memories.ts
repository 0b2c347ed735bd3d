// The web app's memory API (session required): list or search, forget one.
//   GET    /api/memories?type=book&q=dune   newest first, or ranked by recall when q is given
//   DELETE /api/memories/:id                archives it (never recalled again)
import { Hono } from "hono";
import { z } from "zod";
import { createEmbedder } from "../../agents/model/embeddings";
import { archiveEntity, listMemories, recallEntities } from "../../db/repositories/memory";
import { requireSameOrigin } from "../auth/origin";
import { requireSession } from "../auth/session";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";

const ListQuery = z.object({
  type: z.string().trim().toLowerCase().regex(/^[a-z][a-z0-9_ -]{0,39}$/).optional(),
  q: z.string().trim().min(1).max(500).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(100),
});

export const memories = new Hono<AppEnv>()
  .use(requireSession("reject"))
  .get("/", async (c) => {
    const parsed = ListQuery.safeParse(c.req.query());
    if (!parsed.success) throw new ApiError("bad_request", `Invalid query: ${parsed.error.issues[0]?.path.join(".")} ${parsed.error.issues[0]?.message}`);
    const { type, q, limit } = parsed.data;
    const userId = c.var.person.id;
    if (q) {
      const [embedding] = await createEmbedder(c.var.config, c.env).embed([q]).catch(() => [null]);
      const found = await c.var.db.withUser(userId, (tx) => recallEntities(tx, userId, { query: q, ...(type ? { type } : {}), limit, embedding: embedding ?? null }));
      return c.json({
        memories: found.map((r) => ({ ...r.entity, source: r.source && { kind: r.source.kind, excerpt: r.source.excerpt, at: r.source.at }, score: r.score, matchedBy: r.matchedBy })),
      });
    }
    return c.json({ memories: await c.var.db.withUser(userId, (tx) => listMemories(tx, { ...(type ? { type } : {}), limit })) });
  })
  .delete("/:id", requireSameOrigin, async (c) => {
    const id = z.uuid().safeParse(c.req.param("id"));
    if (!id.success) throw new ApiError("bad_request", "Memory ids are UUIDs.");
    const archived = await c.var.db.withUser(c.var.person.id, (tx) => archiveEntity(tx, id.data));
    if (!archived) throw new ApiError("not_found", "No such memory.");
    return c.json({ archived: true });
  });
