// The web app's memory API (session required): the memory center's list, detail, edit, forget, undo.
//   GET    /api/memories?type=&from=&to=&cursor=&limit=  newest learned first, keyset-paged (nextCursor)
//   GET    /api/memories?q=dune&type=&from=&to=            ranked by recall (one page, no cursor)
//   GET    /api/memories/types                             the person's types with counts
//   GET    /api/memories/:id                               properties, source, relations, events
//   PATCH  /api/memories/:id                               {name?, type?, properties?}; 409 on a (type, name) collision
//   DELETE /api/memories/:id                               archives it (never recalled again)
//   POST   /api/memories/:id/restore                       undoes DELETE
// A search and an edit embed text: each is counted against the person's per-minute budget ("search",
// "edit": worker/rate-budget.ts, 429 with Retry-After) once the request is known to be valid.
import { Hono, type Context } from "hono";
import { z } from "zod";
import { EntityType } from "../../agents/entity-type";
import { createEmbedder, embedOne } from "../../agents/integrations/model/embeddings";
import { archiveEntity, nameKeyFits, recallEntities } from "../../db/repositories/memory";
import {
  editMemory,
  InvalidCursorError,
  listMemoryPage,
  memoryDetail,
  memoryTypes,
  restoreMemory,
} from "../../db/repositories/memory-center";
import { requireSameOrigin } from "../auth/origin";
import { requireSession } from "../auth/session";
import { limitBody } from "../body-limit";
import { ApiError } from "../errors";
import { spendBudget } from "../rate-budget";
import type { AppEnv } from "../types";
import { readJson } from "../validation";

const ListQuery = z
  .object({
    type: EntityType.optional(),
    q: z.string().trim().min(1).max(500).optional(),
    from: z.iso.datetime({ offset: true }).optional(),
    to: z.iso.datetime({ offset: true }).optional(),
    cursor: z.string().max(200).optional(),
    limit: z.coerce.number().int().min(1).max(200).default(100),
  })
  .refine((q) => !(q.from && q.to) || Date.parse(q.from) < Date.parse(q.to), { message: "from must be before to", path: ["from"] });

const MemoryEdit = z
  .strictObject({
    name: z.string().trim().min(1).max(200).refine(nameKeyFits, "the name is too long").optional(),
    type: EntityType.optional(),
    properties: z
      .record(z.string().trim().min(1).max(60), z.union([z.string().max(500), z.number(), z.boolean(), z.null()]))
      .refine((p) => Object.keys(p).length <= 50, "at most 50 details")
      .optional(),
  })
  .refine((edit) => Object.keys(edit).length > 0, "change at least one of name, type, properties");

/** The list's query and an edit's body, as the web app sends them (web/src/api.ts types its client with them). */
export type MemoryListQuery = z.input<typeof ListQuery>;
export type MemoryChange = z.input<typeof MemoryEdit>;

function memoryId(c: Context<AppEnv>): string {
  const id = z.uuid().safeParse(c.req.param("id"));
  if (!id.success) throw new ApiError("bad_request", "Memory ids are UUIDs.");
  return id.data;
}

/** The embedding recall would have stored for this (type, name); null when the embedder is unavailable. */
function embedName(c: Context<AppEnv>, text: string): Promise<number[] | null> {
  return embedOne(createEmbedder(c.var.config, c.env), text);
}

export const memories = new Hono<AppEnv>()
  .use(requireSession("reject"))
  .get("/", async (c) => {
    const parsed = ListQuery.safeParse(c.req.query());
    if (!parsed.success)
      throw new ApiError("bad_request", `Invalid query: ${parsed.error.issues[0]?.path.join(".")} ${parsed.error.issues[0]?.message}`);
    const { type, q, limit, cursor } = parsed.data;
    const from = parsed.data.from ? new Date(parsed.data.from) : undefined;
    const to = parsed.data.to ? new Date(parsed.data.to) : undefined;
    const userId = c.var.person.id;
    if (q) {
      await spendBudget(c, "search");
      const embedding = await embedName(c, q);
      const found = await c.var.db.withUser(userId, (tx) =>
        recallEntities(tx, userId, { query: q, ...(type ? { type } : {}), limit, embedding }),
      );
      // Recall ranks; the time range narrows what it found (created_at until the told-at column lands).
      const inRange = found.filter(
        (r) => (!from || Date.parse(r.entity.createdAt) >= from.getTime()) && (!to || Date.parse(r.entity.createdAt) < to.getTime()),
      );
      return c.json({
        memories: inRange.map((r) => ({
          ...r.entity,
          source: r.source && { kind: r.source.kind, excerpt: r.source.excerpt, at: r.source.at },
          score: r.score,
          matchedBy: r.matchedBy,
        })),
        nextCursor: null,
      });
    }
    try {
      const page = await c.var.db.withUser(userId, (tx) =>
        listMemoryPage(tx, userId, {
          limit,
          ...(type ? { type } : {}),
          ...(from ? { from } : {}),
          ...(to ? { to } : {}),
          ...(cursor ? { cursor } : {}),
        }),
      );
      return c.json(page);
    } catch (error) {
      if (error instanceof InvalidCursorError) throw new ApiError("bad_request", error.message);
      throw error;
    }
  })
  .get("/types", async (c) => {
    const userId = c.var.person.id;
    return c.json({ types: await c.var.db.withUser(userId, (tx) => memoryTypes(tx, userId)) });
  })
  .get("/:id", async (c) => {
    const id = memoryId(c);
    const userId = c.var.person.id;
    const detail = await c.var.db.withUser(userId, (tx) => memoryDetail(tx, userId, id));
    if (!detail) throw new ApiError("not_found", "No such memory.");
    return c.json(detail);
  })
  .patch("/:id", requireSameOrigin, limitBody(16 * 1024), async (c) => {
    const id = memoryId(c);
    const edit = await readJson(c, MemoryEdit);
    await spendBudget(c, "edit");
    const userId = c.var.person.id;
    const db = c.var.db;
    // Embedded outside the transaction (a model call); only used when the name or type really changed.
    const current = await db.withUser(userId, (tx) => memoryDetail(tx, userId, id));
    if (current?.memory.status !== "active") throw new ApiError("not_found", "No such memory.");
    const type = edit.type ?? current.memory.type;
    const name = edit.name ?? current.memory.name;
    const renamed = type !== current.memory.type || name !== current.memory.name;
    const embedding = renamed ? await embedName(c, `${type}: ${name}`) : undefined;
    const result = await db.withUser(userId, (tx) =>
      editMemory(tx, userId, id, { ...edit, ...(embedding !== undefined ? { embedding } : {}) }),
    );
    if (result.status === "not_found") throw new ApiError("not_found", "No such memory.");
    if (result.status === "conflict") {
      const forgotten = result.other.status === "archived" ? " (a forgotten one)" : "";
      throw new ApiError("conflict", `Another memory is already called “${result.other.name}” (${result.other.type})${forgotten}.`);
    }
    return c.json({ memory: result.memory });
  })
  .delete("/:id", requireSameOrigin, async (c) => {
    const id = memoryId(c);
    const archived = await c.var.db.withUser(c.var.person.id, (tx) => archiveEntity(tx, id));
    if (!archived) throw new ApiError("not_found", "No such memory.");
    return c.json({ archived: true });
  })
  .post("/:id/restore", requireSameOrigin, async (c) => {
    const id = memoryId(c);
    const restored = await c.var.db.withUser(c.var.person.id, (tx) => restoreMemory(tx, id));
    if (!restored) throw new ApiError("not_found", "No forgotten memory with this id.");
    return c.json({ restored: true });
  });
