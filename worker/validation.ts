// Request bodies are parsed here and nowhere else: malformed JSON and schema mismatches become 400s
// with a message that says what was wrong, never a 500.
import type { Context } from "hono";
import type { z } from "zod";
import { ApiError } from "./errors";

/** Parses the JSON body of `c` with `schema`. */
export async function readJson<S extends z.ZodType>(c: Context, schema: S): Promise<z.infer<S>> {
  const type = c.req.header("content-type") ?? "";
  if (!/^application\/([\w.+-]*\+)?json\b/i.test(type)) {
    throw new ApiError("unsupported_media_type", "Send the body as application/json.");
  }
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    throw new ApiError("invalid_json", "The body is not valid JSON.");
  }
  const result = schema.safeParse(body);
  if (!result.success) {
    const first = result.error.issues[0];
    const where = first?.path.length ? `${first.path.join(".")}: ` : "";
    throw new ApiError("bad_request", `Invalid request body. ${where}${first?.message ?? ""}`.trim());
  }
  return result.data;
}
