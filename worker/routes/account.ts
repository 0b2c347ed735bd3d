// The signed-in person's account (session required).
//   GET    /api/me       who is signed in, their timezone, which doors are linked, and what to say first
//   PUT    /api/me/timezone  {timezone}: an IANA zone (or a city platform/local-time.ts knows) → 200
//                        {timezone}; 400 for one it does not know
//   PUT    /api/me/notify    {reminder?, brief?, review?: "all" | "telegram" | "push", reply?: "all" | "off"}:
//                        where each kind of message Soma sends on its own goes → 200 {notify}; 400 otherwise
//   DELETE /api/account  deletes everything, in this order: the grants of the apps connected through MCP
//                        (worker/mcp/apps.ts: their tokens stop at once); the Postgres rows (by cascade) with a
//                        tombstone for each of the person's sign-in identities, so that no door can
//                        create them again for a day (db/repositories/auth.ts); this isolate's cached
//                        sender; the agent's own storage (eraseAll keeps one marker, so a message that
//                        another isolate still routes there is refused); the person's dead letters
//                        (by their id, and by their Telegram id, read before the rows go: a webhook
//                        letter may have been written before anyone knew whose it was).
//                        Then, without holding up the answer, what outside services keep
//                        (agents/integrations/outside-erasure.ts).
// Rows first: should the agent's erasure fail, nothing of the account can be reached any more (no
// session, no sender, no row), whereas the other way round a failed row delete left a live account
// without its conversation, and a message could recreate the agent in between.
import { Hono } from "hono";
import { z } from "zod";
import { deletePerson } from "../../db/repositories/auth";
import { connectedAccount } from "../../db/repositories/connections";
import { accountLinks, setNotify, setTimezone, telegramUserIdOf } from "../../db/repositories/people";
import { resolveTimeZone } from "../../platform/local-time";
import { NotifyPreferences, notifyChoices } from "../../agents/integrations/channels";
import { contactOf } from "../../db/repositories/digest";
import { forgetSender } from "../telegram/updates";
import { FIRST_MESSAGES } from "../../agents/commands/index";
import { deadLetters } from "../../agents/dead-letters";
import { describeError, logJson } from "../../platform/log";
import { prepareOutsideErasure } from "../../agents/integrations/outside-erasure";
import { agentFor } from "../agent-routing";
import { revokeAllApps } from "../mcp/apps";
import { oauthApi } from "../mcp/oauth";
import { limitBody } from "../body-limit";
import { ApiError } from "../errors";
import { readJson } from "../validation";
import { requireSameOrigin } from "../auth/origin";
import { endSession, requireSession } from "../auth/session";
import type { AppEnv } from "../types";

/** Attempts at erasing the agent's storage before the failure is left to operators (logged). */
const AGENT_ERASE_ATTEMPTS = 3;

const TimezoneBody = z.object({ timezone: z.string().trim().min(1).max(64) });

// Route-level middleware on purpose: this sub-app is mounted at /api, where a `.use()` would guard
// every other API route too.
export const account = new Hono<AppEnv>()
  .get("/me", requireSession("reject"), async (c) => {
    const { person } = c.var;
    const links = await accountLinks(c.var.db, person.id);
    const gmail = await c.var.db.withUser(person.id, (tx) => connectedAccount(tx, "google"));
    return c.json({
      id: person.id,
      displayName: person.displayName,
      timezone: links?.timezone ?? "UTC",
      telegram: { linked: links?.telegram ?? false, bot: c.var.config.TELEGRAM_BOT_USERNAME ?? null },
      google: { connected: Boolean(gmail), email: gmail?.accountEmail ?? null, available: Boolean(c.var.config.GOOGLE_CLIENT_ID) },
      environment: c.var.config.ENVIRONMENT,
      /** What the empty chat offers to tap: what works with the model in use. */
      examples: FIRST_MESSAGES,
      /** Where each kind of message Soma sends on its own goes (agents/integrations/channels.ts). */
      notify: notifyChoices(await c.var.db.withUser(person.id, async (tx) => (await contactOf(tx))?.notify)),
    });
  })
  .put("/me/notify", requireSession("reject"), requireSameOrigin, limitBody(1024), async (c) => {
    const choices = await readJson(c, NotifyPreferences);
    const stored = await setNotify(c.var.db, c.var.person.id, choices);
    return c.json({ notify: notifyChoices(stored) });
  })
  .put("/me/timezone", requireSession("reject"), requireSameOrigin, limitBody(1024), async (c) => {
    const { timezone: asked } = await readJson(c, TimezoneBody);
    const timezone = resolveTimeZone(asked);
    if (!timezone) throw new ApiError("bad_request", `Unknown timezone "${asked}". Use an IANA zone such as Europe/Berlin.`);
    await setTimezone(c.var.db, c.var.person.id, timezone);
    return c.json({ timezone });
  })
  .delete("/account", requireSession("reject"), requireSameOrigin, async (c) => {
    const userId = c.var.person.id;
    const eraseOutside = await prepareOutsideErasure(c.var.config, c.var.db, userId);
    const telegramUserId = await telegramUserIdOf(c.var.db, userId);
    // Every app connected through MCP loses its grant and tokens first: from here no app reaches them.
    await revokeAllApps(oauthApi(c.env, c.req.raw), c.env, userId);
    await deletePerson(c.var.db, userId);
    await endSession(c);
    forgetSender(userId);
    await eraseAgent(c.env, userId, c.var.requestId);
    // Messages of theirs set aside as dead letters go too.
    await deadLetters(c.env).forgetPerson(userId, telegramUserId);
    c.executionCtx.waitUntil(eraseOutside());
    return c.json({ deleted: true });
  });

async function eraseAgent(env: Env, userId: string, requestId: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      const agent = await agentFor(env, userId);
      await agent.eraseAll();
      return;
    } catch (error) {
      if (attempt < AGENT_ERASE_ATTEMPTS) continue;
      // The rows are gone: no door leads to this object any more. Its storage is left for operators.
      logJson("error", { requestId, erasure: "agent storage not erased", agent: userId, error: describeError(error) });
      return;
    }
  }
}
