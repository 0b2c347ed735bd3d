// The apps the signed-in person connected to their memory through MCP (worker/mcp/apps.ts):
//   GET    /api/apps      [{id, name, canRead, canWrite, connectedAt, lastUsedAt}], newest first
//   DELETE /api/apps/:id  revokes it: its tokens stop at once (the next /mcp call is a 401); 404 for
//                         an id that is not one of theirs
import { Hono } from "hono";
import { z } from "zod";
import { requireSameOrigin } from "../auth/origin";
import { requireSession } from "../auth/session";
import { ApiError } from "../errors";
import { listConnectedApps, revokeConnectedApp } from "../mcp/apps";
import { oauthApi } from "../mcp/oauth";
import type { AppEnv } from "../types";

const GrantId = z.string().regex(/^[\w-]{1,128}$/);

export const apps = new Hono<AppEnv>()
  .use(requireSession("reject"))
  .get("/", async (c) => {
    const found = await listConnectedApps(oauthApi(c.env, c.req.raw), c.env, c.var.person.id);
    return c.json({ apps: found.map(({ clientId: _clientId, ...app }) => app) });
  })
  .delete("/:id", requireSameOrigin, async (c) => {
    const id = GrantId.safeParse(c.req.param("id"));
    if (!id.success) throw new ApiError("bad_request", "An app's id is the one GET /api/apps lists.");
    const revoked = await revokeConnectedApp(oauthApi(c.env, c.req.raw), c.env, c.var.person.id, id.data);
    if (!revoked) throw new ApiError("not_found", "No connected app with this id.");
    return c.json({ revoked: true });
  });
