// GET | PUT | POST /api/workflows: Inngest's serve handler with the eight functions.
//   GET   introspection: has_event_key, has_signing_key, mode, function_count; unsigned in cloud mode
//         only those (publicIntrospection), signed the SDK's whole one
//   PUT   sync: registers the functions with Inngest (npm run deploy's, unsigned; or Inngest's in-band one, signed)
//   POST  a function run (signed by Inngest with INNGEST_SIGNING_KEY, or during a key rotation with
//         INNGEST_SIGNING_KEY_FALLBACK, the old key, until the new one is promoted in Inngest)
// The functions are built per request around this request's database connection.
//
// The door before serve() (issue 19, finding 1): the SDK parses a body before it checks the signature,
// and JSON.parse's cost is the object graph, not the bytes (an 8 MB bomb took 179 MB of heap; an
// isolate has 128 MB). So in cloud mode a request is refused on its signature header before its body
// is read (agents/workflows/request-auth.ts); then the body is read under a byte cap and shape limits
// (worker/validation.ts), and its signature checked, before serve() parses it. Dev mode signs nothing
// (neither does the SDK there) but has the same limits.
import type { Context } from "hono";
import { Hono } from "hono";
import { serve } from "inngest/hono";
import { createWorkflows } from "../../agents/workflows";
import { workflowDepsFromEnv } from "../../agents/workflows/env";
import { readSignatureHeader, type HeaderRefusal, type SignatureHeader, signsBody } from "../../agents/workflows/request-auth";
import type { Config } from "../../platform/config";
import type { JsonShapeLimits } from "../../platform/json-shape";
import { limitBody } from "../body-limit";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";
import { DEFAULT_JSON_SHAPE, readShapedText } from "../validation";

/**
 * A run request's largest body. Inngest's executor sends the event, the events and the memoized step
 * outputs only while they fit in 4 MiB (consts.MaxSDKRequestBodySize); past that it sends the event
 * alone with ctx.use_api, and the SDK fetches the rest from Inngest's API itself (fetchAllFnData). The
 * 64 KiB above it is slack for the canonical form, which Inngest measures before making it.
 */
const MAX_RUN_BYTES = 4 * 1024 * 1024 + 64 * 1024;
/** A sync's body: none (npm run deploy's PUT), or Inngest's in-band {url, deployId, …}: small caps. */
const MAX_SYNC_BYTES = 64 * 1024;
const SYNC_SHAPE: JsonShapeLimits = DEFAULT_JSON_SHAPE;
/**
 * A run request's shape. Its values are mostly the memoized step outputs: at most 1000 steps a function
 * (Inngest's limit), ours returning a few values each (counts, ids, outcomes), wrapped by Inngest in
 * {type, data}: ≤ 20 values a step, 20,000 a run. What grows with the number of people is the one step
 * of a cron run that lists them: memory-consolidate's `people` (one value a person; past ~100,000 ids
 * the body passes 4 MiB and Inngest sends use_api instead), morning-brief-cron's and weekly-review's
 * (5 values a person at that local hour: 36,000 such people fit). 200,000 values parse into ~13 MB of
 * V8 heap (64 bytes a value, measured with JSON.parse of empty objects and of UUID strings), so three
 * at once fit in an isolate's 128 MB. Nesting: the deepest real payload is under 10 levels.
 */
const RUN_SHAPE: JsonShapeLimits = { maxDepth: 32, maxNodes: 200_000 };

const limitRun = limitBody(MAX_RUN_BYTES);
const limitSync = limitBody(MAX_SYNC_BYTES);

const HEADER_REFUSALS: Record<HeaderRefusal, string> = {
  missing: "X-Inngest-Signature is missing.",
  malformed: "X-Inngest-Signature is not of the form t=<seconds>&s=<hex HMAC-SHA256>.",
  expired: "X-Inngest-Signature is more than 5 minutes old (or ahead).",
};

export const workflows = new Hono<AppEnv>().on(["GET", "PUT", "POST"], "/", async (c) => {
  const config = c.var.config;
  const signingKeys = signingKeysOf(config);
  const workflowsOf = () => createWorkflows(workflowDepsFromEnv(c.env, c.var.db));
  if (c.req.method === "GET" && signingKeys.length > 0 && !c.req.header("x-inngest-signature")) {
    return c.json(publicIntrospection(config, workflowsOf().list.length));
  }
  const signature = signatureHeaderOf(c, signingKeys);
  const body = c.req.method === "GET" ? "" : await readBody(c);
  if (signature && !(await signsBody(signature, body, signingKeys))) {
    throw new ApiError("unauthorized", "X-Inngest-Signature does not match the body.");
  }
  const { inngest, list } = workflowsOf();
  const handler = serve({
    client: inngest,
    functions: list,
    servePath: "/api/workflows",
    // The signing key and its fallback are the client's (clientOptions): inngest v4's serve() takes none.
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

/**
 * What an unsigned GET learns in cloud mode: the spec's health fields (keys present, cloud mode, eight
 * functions) and that it was not authenticated — the public introspection Inngest's SDK answered before
 * v4 (v4 refuses it with 401, so a plain `curl` of the spec's smoke check 2 failed). Nothing it says
 * is secret: no key hash, origin, app id or SDK version, which only a GET signed with the signing key
 * gets (the SDK's own introspection, `authentication_succeeded: true`). A signature that is there but
 * wrong is still refused (401).
 */
function publicIntrospection(config: Config, functionCount: number) {
  return {
    authentication_succeeded: false,
    function_count: functionCount,
    has_event_key: Boolean(config.INNGEST_EVENT_KEY),
    has_signing_key: Boolean(config.INNGEST_SIGNING_KEY),
    mode: "cloud",
    schema_version: "2024-05-24",
  } as const;
}

/**
 * The keys a signature is checked with, as the SDK checks them: the signing key, then the fallback of a
 * key rotation (INNGEST_SIGNING_KEY_FALLBACK, the old key Inngest signs with until the new one is
 * promoted). In cloud mode only (INNGEST_DEV means dev mode; production strips it); a fallback without
 * a signing key opens nothing, as in the SDK, which then refuses every signed request.
 */
function signingKeysOf(config: Config): string[] {
  if (config.INNGEST_DEV || !config.INNGEST_SIGNING_KEY) return [];
  return config.INNGEST_SIGNING_KEY_FALLBACK
    ? [config.INNGEST_SIGNING_KEY, config.INNGEST_SIGNING_KEY_FALLBACK]
    : [config.INNGEST_SIGNING_KEY];
}

/** The request's signature, refused (401) before its body is read; null where none is needed. */
function signatureHeaderOf(c: Context<AppEnv>, signingKeys: string[]): SignatureHeader | null {
  if (signingKeys.length === 0) return null;
  const header = c.req.header("x-inngest-signature");
  // The out-of-band sync is unsigned by design (the SDK allows it): it only makes the SDK send our
  // functions to Inngest with the signing key. Its body is read under the sync's small caps.
  if (!header && c.req.method === "PUT") return null;
  const read = readSignatureHeader(header);
  if (typeof read === "string") throw new ApiError("unauthorized", HEADER_REFUSALS[read]);
  return read;
}

/** The body under the method's caps (413 past the bytes or the values, 400 too deep), kept for the SDK's c.req.text(). */
async function readBody(c: Context<AppEnv>): Promise<string> {
  const run = c.req.method === "POST";
  // Hono's bodyLimit: a declared length is refused before a byte is read; a streamed body is counted as read.
  await (run ? limitRun : limitSync)(c, async () => {});
  return readShapedText(c, run ? RUN_SHAPE : SYNC_SHAPE);
}
