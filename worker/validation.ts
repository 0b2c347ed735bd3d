// Request bodies are parsed here and nowhere else: malformed JSON and schema mismatches become 400s
// with a message that says what was wrong, never a 500. A body's shape is measured as it streams in,
// before JSON.parse builds it (platform/json-shape.ts): a JSON bomb small enough for a route's byte cap
// is refused with a 4xx after reading no more of it than the limits allow.
import type { Context } from "hono";
import type { z } from "zod";
import {
  describeShapeProblem,
  jsonShapeProblem,
  JsonShapeScanner,
  type JsonShapeLimits,
  type JsonShapeProblem,
} from "../platform/json-shape";
import { ApiError } from "./errors";

/** Enough for every request body but an import's (which sets its own). */
export const DEFAULT_JSON_SHAPE: JsonShapeLimits = { maxDepth: 32, maxNodes: 20_000 };

/** Parses the JSON body of `c` with `schema`, refusing one deeper or larger than `limits`. */
export async function readJson<S extends z.ZodType>(c: Context, schema: S, limits = DEFAULT_JSON_SHAPE): Promise<z.infer<S>> {
  const type = c.req.header("content-type") ?? "";
  if (!/^application\/([\w.+-]*\+)?json\b/i.test(type)) {
    throw new ApiError("unsupported_media_type", "Send the body as application/json.");
  }
  let body: unknown;
  try {
    body = JSON.parse(await readShapedText(c, limits));
  } catch (error) {
    if (error instanceof ApiError) throw error;
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

/**
 * The body of `c` as text, scanned piece by piece as it arrives: past `limits` the read stops (the rest
 * is never read) and the answer is 413 for too many values, 400 for too deep a nesting. The text is kept
 * where Hono keeps a body it has read, so c.req.text() and c.req.json() still work after this.
 */
export async function readShapedText(c: Context, limits: JsonShapeLimits): Promise<string> {
  // Hono keeps the promise of each body it read here (its type says methods; the values are promises).
  const cache = c.req.bodyCache as { text?: Promise<string> };
  const cached = cache.text;
  if (cached) {
    const text = await cached;
    const problem = jsonShapeProblem(text, limits);
    if (problem) throw shapeError(problem);
    return text;
  }
  const body = c.req.raw.body;
  if (!body) return "";
  const scanner = new JsonShapeScanner(limits);
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const pieces: string[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (!scanner.feed(value)) {
      await reader.cancel().catch(() => {});
      throw shapeError(scanner.problem!);
    }
    pieces.push(value);
  }
  const text = pieces.join("");
  cache.text = Promise.resolve(text);
  return text;
}

function shapeError(problem: JsonShapeProblem): ApiError {
  return new ApiError(problem.kind === "nodes" ? "payload_too_large" : "bad_request", describeShapeProblem(problem));
}
