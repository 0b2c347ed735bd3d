// Operator endpoints, behind `Authorization: Bearer <OPS_TOKEN>` (compared in constant time). Outside
// production a deployment without OPS_TOKEN (npm start) answers without one; production never does.
//   GET /api/ops/dead-letters?limit=N   what could not be stored or answered (npm run inbox:dead)
import { Hono } from "hono";
import { z } from "zod";
import { deadLetters } from "../../agents/dead-letters";
import { secretsEqual } from "../auth/secrets";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";

/** Characters of a dead letter's text an operator sees: enough to recognise it, not to read it. */
const PREVIEW_CHARS = 40;

const Query = z.object({ limit: z.coerce.number().int().min(1).max(1000).default(100) });

export const ops = new Hono<AppEnv>()
  .use(async (c, next) => {
    const { OPS_TOKEN: token, ENVIRONMENT } = c.var.config;
    const given = c.req.header("authorization")?.replace(/^Bearer\s+/i, "");
    if (token ? !(await secretsEqual(given, token)) : ENVIRONMENT === "production") {
      throw new ApiError("unauthorized", token ? "Wrong or missing operator token." : "OPS_TOKEN is not set: operator endpoints are off.");
    }
    c.header("Cache-Control", "no-store");
    await next();
  })
  .get("/dead-letters", async (c) => {
    const query = Query.safeParse(c.req.query());
    if (!query.success) throw new ApiError("bad_request", "limit must be a whole number from 1 to 1000.");
    const letters = await deadLetters(c.env).list(query.data.limit);
    return c.json({
      deadLetters: letters.map(({ text, ...letter }) => ({
        ...letter,
        textLength: text.length,
        textPreview: text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text,
      })),
    });
  });
