// `npm run inbox:dead [-- --url BASE] [--limit N] [--env-file F]`: the dead letters of a running Soma —
// Telegram updates that could not be stored, messages an agent set aside — newest first, with their
// errors. BASE defaults to APP_BASE_URL, else the local `npm start` (http://127.0.0.1:PORT). The
// operator token (OPS_TOKEN) is sent as a bearer token and never printed. Exit 0 with the list (empty
// or not), 1 when Soma refused or could not be reached, 2 for wrong usage.
import { parseArgs } from "node:util";
import { loadSettings, runMain, UsageError, type Settings } from "./cli";

interface DeadLetterView {
  key: string;
  origin: "webhook" | "inbox";
  personId: string | null;
  /** The sender's Telegram id (absent from a Soma older than issue 19). */
  senderId?: number | null;
  updateId: number | null;
  error: string;
  attempts: number;
  lastAt: number;
  textLength: number;
  textPreview: string;
}

/** Hosts plain http may reach: this machine. */
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

export async function listDeadLetters(settings: Settings, options: { url?: string; limit?: number }): Promise<DeadLetterView[]> {
  const base = (options.url ?? settings.APP_BASE_URL ?? `http://127.0.0.1:${settings.PORT ?? 8787}`).replace(/\/+$/, "");
  if (!/^https?:\/\//.test(base)) throw new UsageError(`inbox:dead needs an http(s) base URL, not ${JSON.stringify(base)}`);
  // The operator token is a bearer credential: it travels in clear only to this machine.
  if (base.startsWith("http://") && !LOOPBACK.has(new URL(base).hostname)) {
    throw new UsageError(
      `inbox:dead sends OPS_TOKEN: it needs https:// for ${new URL(base).host} (plain http only to 127.0.0.1, localhost or [::1])`,
    );
  }
  const response = await fetch(`${base}/api/ops/dead-letters?limit=${options.limit ?? 100}`, {
    headers: settings.OPS_TOKEN ? { authorization: `Bearer ${settings.OPS_TOKEN}` } : {},
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await response.json().catch(() => null)) as { deadLetters?: DeadLetterView[]; error?: { message: string } } | null;
  if (!response.ok || !body?.deadLetters)
    throw new Error(`inbox:dead: ${base} answered ${response.status}: ${body?.error?.message ?? "no dead letters list"}`);
  return body.deadLetters;
}

export function formatDeadLetters(letters: DeadLetterView[]): string {
  if (letters.length === 0) return "no dead letters";
  const rows = letters.map((l) => [
    new Date(l.lastAt).toISOString(),
    l.origin,
    l.updateId === null ? "-" : String(l.updateId),
    l.personId ?? (l.senderId ? `telegram:${l.senderId}` : "-"),
    String(l.attempts),
    `${JSON.stringify(l.textPreview)} (${l.textLength} chars)`,
    l.error,
  ]);
  const header = ["last failure", "origin", "update", "person", "tries", "text", "error"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.slice(0, 1000).map((r) => (i < 6 ? r[i]!.length : 0))));
  const line = (cells: string[]) => cells.map((cell, i) => (i < 6 ? cell.padEnd(widths[i]!) : cell)).join("  ");
  return [
    line(header),
    line(widths.map((w, i) => (i < 6 ? "-".repeat(w) : "-----"))),
    ...rows.map(line),
    `${letters.length} dead letter${letters.length === 1 ? "" : "s"}`,
  ].join("\n");
}

runMain(import.meta, async () => {
  const { values } = parseArgs({ options: { url: { type: "string" }, limit: { type: "string" }, "env-file": { type: "string" } } });
  const limit = values.limit === undefined ? undefined : Number(values.limit);
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 1000))
    throw new UsageError("--limit takes a whole number from 1 to 1000");
  const letters = await listDeadLetters(loadSettings(process.env, values["env-file"]), { url: values.url, limit });
  console.log(formatDeadLetters(letters));
  return 0;
});
