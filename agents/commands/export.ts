// /export in Telegram, and the export file itself: the same document GET /api/export answers (the
// person's rows through Database.withUser, their conversation from their agent), sent as a JSON file.
import type { Database } from "../../db/database";
import type { ExportMessage, SomaExportV1 } from "../../db/export-format";
import { exportMemory } from "../../db/repositories/export";
import type { Reply } from "../inbox";

const EXPORT_CAPTION = "Everything I keep of you, as one JSON file (docs/export.md). Import it into another Soma account on the web.";

/** The reply to /export: the file, rendered when it is sent (agents/inbox.ts keeps replies small). */
export function exportCommand(): Reply {
  return { document: { kind: "export" }, caption: EXPORT_CAPTION };
}

/** The person's whole export: their rows and `conversation`, as a file named for the day it was made. */
export async function exportFile(
  db: Database,
  userId: string,
  conversation: ExportMessage[],
): Promise<{ name: string; document: SomaExportV1; bytes: Uint8Array }> {
  const memory = await db.withUser(userId, (tx) => exportMemory(tx));
  const document: SomaExportV1 = { ...memory, conversation };
  return {
    name: `soma-export-${document.exportedAt.slice(0, 10)}.json`,
    document,
    bytes: new TextEncoder().encode(JSON.stringify(document, null, 2)),
  };
}
