// The signed-in person's account (session required).
//   GET    /api/me       who is signed in, and which doors are linked
//   DELETE /api/account  deletes everything: Postgres rows (by cascade), the agent's own storage and
//                        the person's dead letters
import { Hono } from "hono";
import { sql } from "drizzle-orm";
import { deletePerson } from "../../db/repositories/auth";
import { forgetSender } from "../telegram/inbox";
import { deadLetters } from "../../agents/dead-letters";
import { agentFor } from "../agent-routing";
import { requireSameOrigin } from "../auth/origin";
import { endSession, requireSession } from "../auth/session";
import type { AppEnv } from "../types";

// Route-level middleware on purpose: this sub-app is mounted at /api, where a `.use()` would guard
// every other API route too.
export const account = new Hono<AppEnv>()
  .get("/me", requireSession("reject"), async (c) => {
    const { person } = c.var;
    const [links] = (await c.var.db.withAuth((tx) =>
      tx.execute(sql`select telegram_user_id is not null as telegram, email from auth.users where id = ${person.id}`),
    )) as unknown as Array<{ telegram: boolean; email: string | null }>;
    const [gmail] = (await c.var.db.withUser(person.id, (tx) =>
      tx.execute(sql`select account_email from oauth_connections where provider = 'google'`),
    )) as unknown as Array<{ account_email: string | null }>;
    return c.json({
      id: person.id,
      displayName: person.displayName,
      telegram: { linked: links?.telegram ?? false, bot: c.var.config.TELEGRAM_BOT_USERNAME ?? null },
      google: { connected: Boolean(gmail), email: gmail?.account_email ?? null, available: Boolean(c.var.config.GOOGLE_CLIENT_ID) },
      environment: c.var.config.ENVIRONMENT,
    });
  })
  .delete("/account", requireSession("reject"), requireSameOrigin, async (c) => {
    const userId = c.var.person.id;
    const agent = await agentFor(c.env, userId);
    await agent.destroy();
    await endSession(c);
    await deletePerson(c.var.db, userId);
    forgetSender(userId);
    // Messages of theirs set aside as dead letters go too.
    await deadLetters(c.env).forgetPerson(userId);
    return c.json({ deleted: true });
  });
