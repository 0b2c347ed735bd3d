// GET | PUT | POST /api/workflows: Inngest's serve handler with the eight functions.
//   GET   introspection: has_event_key, has_signing_key, mode, function_count (signed in cloud mode)
//   PUT   sync: registers the functions with Inngest (run on every deploy)
//   POST  a function run (signed by Inngest with INNGEST_SIGNING_KEY; the SDK verifies it)
// The functions are built per request around this request's database connection.
import { Hono } from "hono";
import { serve } from "inngest/hono";
import { createWorkflows } from "../../agents/workflows";
import { workflowDepsFromEnv } from "../../agents/workflows/env";
import { limitBody } from "../body-limit";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";

/** Run requests carry the event and the memoized step outputs. */
const MAX_RUN_BYTES = 8 * 1024 * 1024;

export const workflows = new Hono<AppEnv>().on(["GET", "PUT", "POST"], "/", limitBody(MAX_RUN_BYTES), async (c) => {
  const config = c.var.config;
  const { inngest, list } = createWorkflows(workflowDepsFromEnv(c.env, c.var.db));
  const handler = serve({
    client: inngest,
    functions: list,
    servePath: "/api/workflows",
    ...(config.INNGEST_SIGNING_KEY ? { signingKey: config.INNGEST_SIGNING_KEY } : {}),
    ...(config.APP_BASE_URL ? { serveOrigin: config.APP_BASE_URL } : {}),
  });
  try {
    return await handler(c);
  } catch (error) {
    // The SDK parses the body itself and lets a malformed one escape as a SyntaxError; Inngest only
    // ever sends JSON, so that is the caller's fault (400), not ours (a 500 Inngest would retry).
    if (error instanceof SyntaxError) throw new ApiError("invalid_json", "The body is not valid JSON.");
    throw error;
  }
});
