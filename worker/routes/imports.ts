// Imports of conversations from other assistants (session required, same origin; issue 30). The web app
// reads the export in the browser — ChatGPT's .zip or conversations.json, Claude's conversations.json
// (platform/conversation-imports.ts) — shows what it holds, and sends Soma only the conversations, in
// batches: an export of hundreds of MB is never held whole in the Worker, and nothing of it but the
// conversations' words ever leaves the browser.
//   POST   /api/imports                    {origin, conversations, from, to} → 201 the import (receiving);
//                                          409 while another import of the person's is under way
//   POST   /api/imports/:id/conversations  {conversations: [...]} (at most 100, each within IMPORT_BOUNDS)
//                                          → {received, import}; a conversation sent twice counts once
//   POST   /api/imports/:id/start          the import starts (or, stopped by the day's budget, goes on)
//                                          reading in the background → {import}
//   POST   /api/imports/pasted             {text}: saved memories pasted from ChatGPT or Claude, one a line,
//                                          received and started at once → 201 {import}
//   GET    /api/imports                    {imports: [...]}, newest first, with their progress
//   DELETE /api/imports/:id                cancels it: what was not read yet is dropped → {import}
// Malformed bodies are 400 with what is wrong; an import that is not the person's is 404.
import { Hono } from "hono";
import { z } from "zod";
import { localEvent } from "../../agents/local-runs";
import { devWithoutCloud, emitEvents } from "../../agents/workflows/client";
import { importRequested } from "../../agents/workflows/events";
import {
  cancelImport,
  createImport,
  type ImportProgress,
  importProgress,
  listImports,
  receiveConversations,
  setImportState,
} from "../../db/repositories/conversation-imports";
import { IMPORT_BOUNDS, ImportFormatError, readPasted, summarize } from "../../platform/conversation-imports";
import { agentFor } from "../agent-routing";
import { requireSameOrigin } from "../auth/origin";
import { requireSession } from "../auth/session";
import { limitBody } from "../body-limit";
import { ApiError } from "../errors";
import { rateLimited } from "../rate-budget";
import type { AppEnv } from "../types";
import { readJson } from "../validation";

const at = z.iso.datetime({ offset: true });
const Origin = z.enum(["chatgpt", "claude"]);

const Plan = z.object({
  origin: Origin,
  conversations: z.number().int().min(1).max(100_000),
  from: at.nullable(),
  to: at.nullable(),
});

const Conversation = z.object({
  origin: Origin,
  id: z.string().min(1).max(IMPORT_BOUNDS.id),
  title: z.string().max(IMPORT_BOUNDS.title),
  startedAt: at,
  messages: z
    .array(z.object({ role: z.enum(["user", "assistant"]), text: z.string().min(1).max(IMPORT_BOUNDS.text), at }))
    .max(IMPORT_BOUNDS.messages),
});

const Batch = z.object({ conversations: z.array(Conversation).min(1).max(100) });
const Pasted = z.object({ text: z.string().min(1).max(200_000) });
const importId = z.uuid();

/** What one batch may weigh: 100 conversations of real sizes, well within a Worker's memory. */
const MAX_BATCH_BYTES = 4 * 1024 * 1024;

/** The import `id` of the signed-in person, or 404. */
async function ownImport(c: { var: AppEnv["Variables"] }, id: string): Promise<ImportProgress> {
  if (!importId.safeParse(id).success) throw new ApiError("bad_request", "Not an import id.");
  const progress = await c.var.db.withUser(c.var.person.id, (tx) => importProgress(tx, id));
  if (!progress) throw new ApiError("not_found", "No such import.");
  return progress;
}

export const imports = new Hono<AppEnv>()
  .get("/", requireSession("reject"), async (c) => {
    return c.json({ imports: await c.var.db.withUser(c.var.person.id, (tx) => listImports(tx)) });
  })
  .post("/", requireSession("reject"), requireSameOrigin, rateLimited("import"), limitBody(4096), async (c) => {
    const plan = await readJson(c, Plan);
    const userId = c.var.person.id;
    const created = await c.var.db.withUser(userId, async (tx) => {
      const busy = (await listImports(tx, 20)).find((i) => i.state === "receiving" || i.state === "running");
      if (busy) throw new ApiError("conflict", "Another import is under way: wait for it to finish, or cancel it first.");
      return createImport(tx, userId, plan);
    });
    return c.json({ import: created }, 201);
  })
  .post("/pasted", requireSession("reject"), requireSameOrigin, rateLimited("import"), limitBody(256 * 1024), async (c) => {
    const { text } = await readJson(c, Pasted);
    let conversation: ReturnType<typeof readPasted>;
    try {
      conversation = readPasted(text);
    } catch (error) {
      if (error instanceof ImportFormatError) throw new ApiError("bad_request", error.message);
      throw error;
    }
    const userId = c.var.person.id;
    const summary = summarize([conversation]);
    const created = await c.var.db.withUser(userId, async (tx) => {
      const made = await createImport(tx, userId, { origin: "pasted", conversations: 1, from: summary.from, to: summary.to });
      await receiveConversations(tx, userId, made.id, [conversation]);
      await setImportState(tx, made.id, "running");
      return made;
    });
    await startReading(c, created.id);
    return c.json({ import: await ownImport(c, created.id) }, 201);
  })
  .post(
    "/:id/conversations",
    requireSession("reject"),
    requireSameOrigin,
    rateLimited("import-batch"),
    limitBody(MAX_BATCH_BYTES),
    async (c) => {
      const progress = await ownImport(c, c.req.param("id"));
      if (progress.state !== "receiving")
        throw new ApiError("conflict", `This import is ${progress.state}: it takes no more conversations.`);
      const { conversations } = await readJson(c, Batch);
      const foreign = conversations.find((conversation) => conversation.origin !== progress.origin);
      if (foreign)
        throw new ApiError(
          "bad_request",
          `This import is from ${progress.origin}; a conversation from ${foreign.origin} does not belong in it.`,
        );
      const userId = c.var.person.id;
      const received = await c.var.db.withUser(userId, (tx) => receiveConversations(tx, userId, progress.id, conversations));
      return c.json({ received, import: await ownImport(c, progress.id) });
    },
  )
  .post("/:id/start", requireSession("reject"), requireSameOrigin, async (c) => {
    const progress = await ownImport(c, c.req.param("id"));
    if (progress.state === "running") return c.json({ import: progress });
    // A stopped import (the day's model calls were spent) goes on where it stopped.
    if (progress.state !== "receiving" && progress.state !== "stopped") throw new ApiError("conflict", `This import is ${progress.state}.`);
    await c.var.db.withUser(c.var.person.id, (tx) => setImportState(tx, progress.id, "running"));
    await startReading(c, progress.id);
    return c.json({ import: await ownImport(c, progress.id) });
  })
  .delete("/:id", requireSession("reject"), requireSameOrigin, async (c) => {
    const progress = await ownImport(c, c.req.param("id"));
    return c.json({ import: await c.var.db.withUser(c.var.person.id, (tx) => cancelImport(tx, progress.id)) });
  });

/**
 * Hands the import to memory-consolidate; in dev mode without a workflow engine, to the person's agent.
 * The event's id is the import's and the minute's: started twice at once, it is sent once (and a run
 * finds only what is still waiting, one run per person at a time); started again the next day, anew.
 */
async function startReading(c: { env: Env; var: AppEnv["Variables"] }, id: string): Promise<void> {
  const userId = c.var.person.id;
  const event = importRequested.create({ userId, importId: id }, { id: `import-${id}-${Math.floor(Date.now() / 60_000)}` });
  if (await emitEvents(c.var.config, [event], { requestId: c.var.requestId, userId })) return;
  if (devWithoutCloud(c.var.config)) return (await agentFor(c.env, userId)).runHere(localEvent(event));
  // Nobody took it: the import waits to be started again.
  await c.var.db.withUser(userId, (tx) => setImportState(tx, id, "receiving"));
  throw new ApiError("unavailable", "The import could not be started: try again in a minute.");
}
