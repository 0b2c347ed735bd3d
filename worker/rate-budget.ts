// The web API's per-person budgets (agents/rate-limit.ts): a costly request — an import or its preview,
// an export, a search, an edit that embeds — is counted in the person's own agent, as their chat
// messages are, before its work. Over the limit the answer is 429 with the seconds until a slot frees
// (Retry-After, and in the message the web app shows); a refused request counts against nothing.
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { RATE_LIMITS, type ApiBudget } from "../agents/rate-limit";
import { agentFor } from "./agent-routing";
import { ApiError } from "./errors";
import type { AppEnv } from "./types";

const COUNTED: Record<ApiBudget, string> = {
  import: "imports a minute (a preview counts as one)",
  "import-batch": "batches of conversations a minute",
  export: "exports a minute",
  search: "searches a minute",
  edit: "changes to memories and facts a minute",
  chat: "messages a minute",
};

/** Counts this request against the signed-in person's `budget`; 429 when they are over it. */
export async function spendBudget(c: Context<AppEnv>, budget: ApiBudget): Promise<void> {
  const verdict = await (await agentFor(c.env, c.var.person.id)).spend(budget);
  if (verdict.ok) return;
  const seconds = verdict.retryAfterSeconds;
  throw new ApiError(
    "rate_limited",
    `At most ${RATE_LIMITS[budget]} ${COUNTED[budget]}. Try again in ${seconds} second${seconds === 1 ? "" : "s"}.`,
    { "Retry-After": String(seconds) },
  );
}

/** spendBudget as a route's middleware, for a request whose every part is the costly work. */
export function rateLimited(budget: ApiBudget) {
  return createMiddleware<AppEnv>(async (c, next) => {
    await spendBudget(c, budget);
    await next();
  });
}
