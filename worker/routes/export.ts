// Everything is the person's (session required; the format is docs/export.md):
//   GET  /api/export  one JSON file of all their data, as an attachment: their rows, read through
//                     Database.withUser (row-level security: nothing of anyone else), and the
//                     conversation their agent keeps
//   POST /api/import  loads such a file into their memory, idempotently (a second import adds
//                     nothing), and answers how many rows and messages it added; memory/imported
//                     then has memory-consolidate embed what it added
//   POST /api/import?dryRun=1  the same checks and statements, rolled back: answers the counts an
//                     import would add ({dryRun: true, imported}) and writes nothing (the web app's preview)
// An import is refused whole with a 4xx JSON error before anything is written: over 10 MB (413, counted
// while the body is read), not JSON (400), not a Soma export or another version (400, saying which),
// or any row that does not fit the format (400, naming the path of the first problem).
import { Hono } from "hono";
import { z } from "zod";
import { exportFile } from "../../agents/commands/export";
import { emitEvents } from "../../agents/workflows/client";
import { memoryImported, reminderCreated } from "../../agents/workflows/events";
import { ExportedConversation, ExportEnvelope, EXPORT_VERSION, SomaExport } from "../../db/export-format";
import { importMemory, previewImport } from "../../db/repositories/export";
import { importableMessages } from "../../agents/conversation-transfer";
import { agentFor } from "../agent-routing";
import { requireSameOrigin } from "../auth/origin";
import { requireSession } from "../auth/session";
import { limitBody } from "../body-limit";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";
import { readJson } from "../validation";

/** The messages an import keeps at most (UserAgent.maxPersistedMessages), for the dry run's count. */
const PREVIEW_MESSAGES_KEPT = 500;

/** The largest file an import reads (an export of tens of thousands of memories fits). */
const MAX_IMPORT_BYTES = 10 * 1024 * 1024;

// Route-level middleware: this sub-app is mounted at /api, where a `.use()` would guard every route.
export const exportImport = new Hono<AppEnv>()
  .get("/export", requireSession("reject"), async (c) => {
    const userId = c.var.person.id;
    const agent = await agentFor(c.env, userId);
    const file = await exportFile(c.var.db, userId, ExportedConversation.parse(JSON.parse(await agent.transcript())));
    return new Response(file.bytes, {
      headers: {
        "content-type": "application/json; charset=utf-8",
        "content-disposition": `attachment; filename="${file.name}"`,
        "cache-control": "no-store",
      },
    });
  })
  .post("/import", requireSession("reject"), requireSameOrigin, limitBody(MAX_IMPORT_BYTES), async (c) => {
    const body = await readJson(c, z.unknown());
    const envelope = ExportEnvelope.safeParse(body);
    if (!envelope.success) throw new ApiError("bad_request", `Not a Soma export file: ${firstProblem(envelope.error)}`);
    if (envelope.data.version !== EXPORT_VERSION) {
      throw new ApiError("bad_request", `This is a version ${envelope.data.version} export; this server reads version ${EXPORT_VERSION}.`);
    }
    const parsed = SomaExport.safeParse(body);
    if (!parsed.success) throw new ApiError("bad_request", `Invalid export file: ${firstProblem(parsed.error)}`);
    const { conversation, ...rows } = parsed.data;
    const userId = c.var.person.id;

    if (c.req.query("dryRun") === "1") {
      const added = await c.var.db.withUser(userId, (tx) => previewImport(tx, userId, rows));
      const agent = await agentFor(c.env, userId);
      const present = new Set(ExportedConversation.parse(JSON.parse(await agent.transcript())).map((m) => m.id));
      const messages = importableMessages(conversation, present, rows.exportedAt, PREVIEW_MESSAGES_KEPT).length;
      return c.json({ dryRun: true, imported: { ...added, messages } });
    }

    const outcome = await c.var.db.withUser(userId, (tx) => importMemory(tx, userId, rows));
    const agent = await agentFor(c.env, userId);
    const chat = await agent.importConversation(conversation, rows.exportedAt);
    // Only a deleted person's stray request gets here (deletion ends their sessions).
    if (chat.status === "erased") throw new ApiError("not_found", "This account was deleted.");
    const events = [
      // Imported reminders still to come go to the delivery workflow, as schedule_create's do (the
      // event id is the reminder's: a second import cannot schedule a second delivery).
      ...outcome.reminders.map((r) => reminderCreated.create({ userId, eventId: r.eventId, at: r.at }, { id: `reminder-${r.eventId}` })),
      // The file carries no embeddings: memory-consolidate embeds the entities and facts it added. An
      // import that added none emits nothing, so a file sent again is harmless and the id may be the
      // time: a later import that adds more needs a backfill of its own. (If the event is lost, the
      // nightly runs embed them, a bounded number a night.)
      ...(outcome.added.entities > 0 || outcome.added.facts > 0
        ? [memoryImported.create({ userId }, { id: `memory-imported-${userId}-${Date.now()}` })]
        : []),
    ];
    if (events.length > 0) await emitEvents(c.var.config, events, { requestId: c.var.requestId, userId });
    return c.json({ imported: { ...outcome.added, messages: chat.added } });
  });

/** "entities.3.name: Too big: …" — where the first problem is, and what it is. */
function firstProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  return issue ? `${issue.path.length ? issue.path.join(".") : "(the file)"}: ${issue.message}` : "unreadable";
}
