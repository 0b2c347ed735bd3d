// Everything is the person's (session required; the format is docs/export.md):
//   GET  /api/export  one JSON file of all their data, as an attachment: their rows, read through
//                     Database.withUser (row-level security: nothing of anyone else), and the
//                     conversation their agent keeps
//   POST /api/import  loads such a file into their memory, idempotently (a second import adds
//                     nothing), and answers how many rows and messages it added; memory/imported
//                     then has memory-consolidate embed what it added
//   POST /api/import?dryRun=1  the same checks and statements, rolled back: answers the counts an
//                     import would add ({dryRun: true, imported}) and writes nothing (the web app's preview)
//   GET  /api/export/vault  the same rows as a Markdown vault (.zip of notes that open in Obsidian, db/vault.ts)
//   POST /api/import with Content-Type application/zip: such a vault, read back into an export document
//                     (its notes' front matter), then checked and loaded exactly like a JSON file
// Each is counted against the person's per-minute budget first (worker/rate-budget.ts: 429 with
// Retry-After; a preview and an import share one). An import is refused whole with a 4xx JSON error
// before anything is written: over 4 MB (413, counted while the body is read), more values or deeper
// nesting than a real export of that size has (413, 400: measured before it is parsed), not JSON (400),
// not a Soma export or another version (400, saying which), any row that does not fit the format (400,
// naming the path of the first problem), or past one of IMPORT_CAPS (413 for the rows of one file, 409
// for what the account would then hold).
import { Hono } from "hono";
import { z } from "zod";
import { exportFile } from "../../agents/commands/export";
import { devWithoutCloud, emitEvents } from "../../agents/workflows/client";
import { localEvent } from "../../agents/local-runs";
import { memoryImported, reminderCreated } from "../../agents/workflows/events";
import { ExportedConversation, ExportEnvelope, EXPORT_VERSION, MAX_CONVERSATION_MESSAGES, SomaImport } from "../../db/export-format";
import { importMemory, previewImport } from "../../db/repositories/export";
import { readVault, renderVault, unzipVault, VaultError, zipVault } from "../../db/vault";
import { IMPORT_CAPS, ImportCapError } from "../../db/repositories/import-caps";
import type { JsonShapeLimits } from "../../platform/json-shape";
import { importableMessages } from "../../agents/conversation-transfer";
import { agentFor } from "../agent-routing";
import { requireSameOrigin } from "../auth/origin";
import { requireSession } from "../auth/session";
import { limitBody } from "../body-limit";
import { ApiError } from "../errors";
import { rateLimited } from "../rate-budget";
import type { AppEnv } from "../types";
import { DEFAULT_JSON_SHAPE, readJson } from "../validation";

/** The messages an import keeps at most (UserAgent.maxPersistedMessages), for the dry run's count. */
const PREVIEW_MESSAGES_KEPT = 500;

/**
 * The largest file an import reads. A real export's row, as GET /api/export writes it (pretty-printed),
 * is about 450 bytes (an entity with a few details, a fact, a source with a message's words), and the
 * conversation (at most the 500 messages an agent keeps) about 1 KB a message: IMPORT_CAPS.rows of them
 * is about 2.3 MB, plus 0.5 MB, and 4 MB leaves room for longer texts.
 */
export const MAX_IMPORT_BYTES = 4 * 1024 * 1024;

/**
 * The shape of the largest file an import parses (worker/validation.ts measures it before JSON.parse).
 * Values: a row has at most 12 fields (25 values with their keys and the row), and a real one's
 * free-form object a few more, so 64 a row; a message with a tool call and its result has 50 to 100, so
 * 200 a message; at IMPORT_CAPS.rows and MAX_CONVERSATION_MESSAGES that is 520,000 values, which is
 * also what MAX_IMPORT_BYTES holds at 8 bytes a value (a real export averages about 16: ids, dates and
 * keys). A bomb of 4 MB (`[0,0,…]`: 2 million values, `[{},{},…]`: 1.4 million objects) is refused
 * after its first quarter to two fifths. Depth: a free-form object sits at level 4 and nests 5 levels (8); a
 * message's tool results may nest further, so the default's 32 stays.
 */
export const IMPORT_JSON_SHAPE: JsonShapeLimits = {
  maxDepth: DEFAULT_JSON_SHAPE.maxDepth,
  maxNodes: IMPORT_CAPS.rows * 64 + MAX_CONVERSATION_MESSAGES * 200,
};

// Route-level middleware: this sub-app is mounted at /api, where a `.use()` would guard every route.
export const exportImport = new Hono<AppEnv>()
  .get("/export", requireSession("reject"), rateLimited("export"), async (c) => {
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
  .get("/export/vault", requireSession("reject"), rateLimited("export"), async (c) => {
    const { document } = await exportFile(c.var.db, c.var.person.id, []);
    return new Response(zipVault(renderVault(document)), {
      headers: {
        "content-type": "application/zip",
        "content-disposition": `attachment; filename="soma-vault-${document.exportedAt.slice(0, 10)}.zip"`,
        "cache-control": "no-store",
      },
    });
  })
  // The budget is spent before the body is read: reading and parsing it are most of an import's cost.
  .post("/import", requireSession("reject"), requireSameOrigin, rateLimited("import"), limitBody(MAX_IMPORT_BYTES), async (c) => {
    const body = /^application\/zip\b/i.test(c.req.header("content-type") ?? "")
      ? readVaultBody(new Uint8Array(await c.req.arrayBuffer()))
      : await readJson(c, z.unknown(), IMPORT_JSON_SHAPE);
    const envelope = ExportEnvelope.safeParse(body);
    if (!envelope.success) throw new ApiError("bad_request", `Not a Soma export file: ${firstProblem(envelope.error)}`);
    if (envelope.data.version !== EXPORT_VERSION) {
      throw new ApiError("bad_request", `This is a version ${envelope.data.version} export; this server reads version ${EXPORT_VERSION}.`);
    }
    const parsed = SomaImport.safeParse(body);
    if (!parsed.success) throw new ApiError("bad_request", `Invalid export file: ${firstProblem(parsed.error)}`);
    const { conversation, ...rows } = parsed.data;
    const userId = c.var.person.id;

    if (c.req.query("dryRun") === "1") {
      const added = await c.var.db.withUser(userId, (tx) => withinCaps(() => previewImport(tx, userId, rows)));
      const agent = await agentFor(c.env, userId);
      const present = new Set(ExportedConversation.parse(JSON.parse(await agent.transcript())).map((m) => m.id));
      const messages = importableMessages(conversation, present, rows.exportedAt, PREVIEW_MESSAGES_KEPT).length;
      return c.json({ dryRun: true, imported: { ...added, messages } });
    }

    const outcome = await c.var.db.withUser(userId, (tx) => withinCaps(() => importMemory(tx, userId, rows)));
    const agent = await agentFor(c.env, userId);
    const chat = await agent.importConversation(conversation, rows.exportedAt);
    // Only a deleted person's stray request gets here (deletion ends their sessions).
    if (chat.status === "erased") throw new ApiError("not_found", "This account was deleted.");
    // Imported reminders still to come go to the delivery workflow (or, in dev mode without a dev server, the
    // agent), as schedule_create's do (the event id is the reminder's: a second import cannot schedule a second delivery).
    const reminders = outcome.reminders.map((r) =>
      reminderCreated.create({ userId, eventId: r.eventId, at: r.at }, { id: `reminder-${r.eventId}` }),
    );
    const events = [
      ...reminders,
      // The file carries no embeddings: memory-consolidate embeds the entities and facts it added. An
      // import that added none emits nothing, so a file sent again is harmless and the id may be the
      // time: a later import that adds more needs a backfill of its own. (If the event is lost, the
      // nightly runs embed them, a bounded number a night.)
      ...(outcome.added.entities > 0 || outcome.added.facts > 0
        ? [memoryImported.create({ userId }, { id: `memory-imported-${userId}-${Date.now()}` })]
        : []),
    ];
    const sent = events.length === 0 || (await emitEvents(c.var.config, events, { requestId: c.var.requestId, userId }));
    if (!sent && devWithoutCloud(c.var.config)) for (const reminder of reminders) await agent.runHere(localEvent(reminder));
    return c.json({ imported: { ...outcome.added, messages: chat.added } });
  });

/** A vault's .zip as the export document its notes hold; 400 saying why when it is not one. */
function readVaultBody(bytes: Uint8Array): unknown {
  try {
    return readVault(unzipVault(bytes));
  } catch (error) {
    if (error instanceof VaultError) throw new ApiError("bad_request", error.message);
    throw error;
  }
}

/** `work`, with a cap it crossed as the client's error: the rows of one file are too large a request,
 * what the account would then hold conflicts with what it holds. */
async function withinCaps<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ImportCapError) throw new ApiError(error.cap === "rows" ? "payload_too_large" : "conflict", error.message);
    throw error;
  }
}

/** "entities.3.name: Too big: …" — where the first problem is, and what it is. */
function firstProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  return issue ? `${issue.path.length ? issue.path.join(".") : "(the file)"}: ${issue.message}` : "unreadable";
}
