// `npm run smoke -- --base-url URL`: the spec's smoke expectations against a deployment, as a table.
//   tls       https, or plain http only on a loopback address
//   1 health  GET /api/health → ok true, db true
//   2 workflows  GET /api/workflows → keys present, cloud, 8 functions; signed with INNGEST_SIGNING_KEY
//             (when set here) → authenticated
//   3 login   GET /login → 200 HTML
//   4 chat    POST /api/chat without a session → 307 to /login
//   5 webhook getWebhookInfo → our webhook address, pending_update_count 0
//   6 e2e     only with SMOKE_TELEGRAM_CHAT_ID: signed updates to the webhook as that chat (/start, a
//             book, "which books did I read?"), the entities row checked through DATABASE_URL (RLS, as
//             that person), the replies and two `bot`+`message` traces through the Langfuse API.
// Exit 1 on any failure. `checks: "1-5"` is what deploy and rollback run.
import { parseArgs } from "node:util";
import { inngestSignature } from "../agents/workflows/signature";
import { Database } from "../db/database";
import { formatTable, loadSettings, runMain, UsageError, type Row, type Settings } from "./cli";
import { sql } from "drizzle-orm";

const TIMEOUT_MS = 10_000;
/** The spec's reply expectation for the end-to-end check. */
const REPLY_BUDGET_MS = 5_000;

export interface SmokeOptions {
  baseUrl: string;
  settings: Settings;
  /** "1-5" (deploy, rollback) or "all" (adds 6 when SMOKE_TELEGRAM_CHAT_ID is set). */
  checks?: "1-5" | "all";
  log?: (line: string) => void;
}

export async function smoke({ baseUrl, settings, checks = "all", log = console.log }: SmokeOptions): Promise<{ ok: boolean; rows: Row[] }> {
  const base = baseUrl.replace(/\/+$/, "");
  const rows: Row[] = [];
  const check = async (name: string, run: () => Promise<string>) => {
    try {
      rows.push({ check: name, ok: true, detail: await run() });
    } catch (error) {
      rows.push({ check: name, ok: false, detail: error instanceof Error ? error.message : String(error) });
    }
  };

  await check("tls", async () => {
    const url = new URL(base);
    if (url.protocol === "https:") return "https";
    if (url.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)) return "plain http on loopback (local run)";
    throw new Error(`${url.protocol}//${url.host} is not https: a deployment must be served over TLS`);
  });

  await check("1 health", async () => {
    const { status, body } = await getJson(`${base}/api/health`);
    expect(status === 200 && body.ok === true && body.db === true, `status ${status}, ${JSON.stringify(body)}`);
    return `ok ${body.ok}, db ${body.db}`;
  });

  await check("2 workflows", async () => {
    // The spec's request: a plain GET. Then, with the signing key at hand, the same signed, which only
    // a deployment holding that very key authenticates.
    const { status, body } = await getJson(`${base}/api/workflows`);
    const good =
      status === 200 && body.has_event_key === true && body.has_signing_key === true && body.mode === "cloud" && body.function_count === 8;
    const summary = `has_event_key ${body.has_event_key}, has_signing_key ${body.has_signing_key}, mode ${body.mode}, function_count ${body.function_count}`;
    expect(good, `status ${status}, ${summary}`);
    const key = settings.INNGEST_SIGNING_KEY;
    if (!key) return `${summary} (not signed: INNGEST_SIGNING_KEY is not set here)`;
    const signed = await getJson(`${base}/api/workflows`, { "X-Inngest-Signature": await inngestSignature("", key) });
    expect(
      signed.status === 200 && signed.body.authentication_succeeded === true,
      `signed with INNGEST_SIGNING_KEY: status ${signed.status}, authentication_succeeded ${signed.body.authentication_succeeded}`,
    );
    return `${summary}, signed introspection authenticated`;
  });

  await check("3 login", async () => {
    const response = await fetch(`${base}/login`, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    const type = response.headers.get("content-type") ?? "";
    await response.body?.cancel();
    expect(response.status === 200 && type.includes("text/html"), `status ${response.status}, ${type}`);
    return `200 ${type.split(";")[0]}`;
  });

  await check("4 chat", async () => {
    const response = await fetch(`${base}/api/chat`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: "smoke" }),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    await response.body?.cancel();
    const location = response.headers.get("location") ?? "";
    expect(
      response.status === 307 && new URL(location, base).pathname === "/login",
      `status ${response.status}, location ${location || "none"}`,
    );
    return `307 → ${location}`;
  });

  await check("5 webhook", async () => {
    const info = await webhookInfo(settings);
    const expected = `${base}/api/messenger/webhook`;
    expect(info.url === expected, `url ${info.url || "(none)"}, expected ${expected}`);
    expect(
      info.pending_update_count === 0,
      `pending_update_count ${info.pending_update_count}${info.last_error_message ? `, last error: ${info.last_error_message}` : ""}`,
    );
    return `url ${info.url}, pending_update_count 0`;
  });

  if (checks === "all" && settings.SMOKE_TELEGRAM_CHAT_ID) await check("6 e2e", () => endToEnd(base, settings));

  log(formatTable(rows));
  const ok = rows.every((r) => r.ok);
  log(ok ? `smoke: ${rows.length}/${rows.length} passed` : `smoke: ${rows.filter((r) => !r.ok).length} of ${rows.length} FAILED`);
  return { ok, rows };
}

/** getWebhookInfo for the configured bot (TELEGRAM_API_ROOT lets tests use a stand-in). */
export async function webhookInfo(
  settings: Settings,
): Promise<{ url: string; pending_update_count: number; last_error_message?: string; allowed_updates?: string[] }> {
  const token = settings.TELEGRAM_BOT_TOKEN;
  if (!token) throw new Error("TELEGRAM_BOT_TOKEN is not set");
  const root = (settings.TELEGRAM_API_ROOT ?? "https://api.telegram.org").replace(/\/+$/, "");
  const response = await fetch(`${root}/bot${token}/getWebhookInfo`, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  const body = (await response.json()) as {
    ok: boolean;
    result?: { url: string; pending_update_count: number; last_error_message?: string; allowed_updates?: string[] };
    description?: string;
  };
  if (!body.ok || !body.result) throw new Error(`getWebhookInfo failed: ${body.description ?? response.status}`);
  return body.result;
}

/** Smoke 6: a conversation through the real webhook, checked in Postgres and Langfuse. */
async function endToEnd(base: string, settings: Settings): Promise<string> {
  const needed = ["TELEGRAM_WEBHOOK_SECRET", "DATABASE_URL", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"] as const;
  const missing = needed.filter((n) => !settings[n]);
  if (missing.length) throw new Error(`needs ${missing.join(", ")}`);
  const chatId = Number(settings.SMOKE_TELEGRAM_CHAT_ID);
  const title = `Smoke Test ${Date.now().toString(36)}`;
  let updateId = Math.floor(Date.now() / 1000) * 10;
  const startedAt = new Date();
  const send = async (text: string) => {
    const response = await fetch(`${base}/api/messenger/webhook`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": settings.TELEGRAM_WEBHOOK_SECRET! },
      body: JSON.stringify({
        update_id: ++updateId,
        message: {
          message_id: updateId % 1_000_000,
          date: Math.floor(Date.now() / 1000),
          chat: { id: chatId, type: "private" },
          from: { id: chatId, is_bot: false, first_name: "Smoke" },
          text,
        },
      }),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    await response.body?.cancel();
    expect(response.status === 200, `webhook answered ${response.status} to ${JSON.stringify(text)}`);
  };

  const db = new Database(settings.DATABASE_URL!, { max: 1 });
  try {
    await send("/start");
    const sentAt = Date.now();
    await send(`I just finished reading ${title}`);
    const userId = await poll("the person's row", async () => {
      const [row] = await db.withSystem((tx) => tx.execute(sql`select id from users where telegram_chat_id = ${chatId}`));
      return (row as { id?: string } | undefined)?.id;
    });
    await poll(`an entities row (book, ${title})`, async () => {
      const rows = await db.withUser(userId, (tx) => tx.execute(sql`select 1 from entities where type = 'book' and name = ${title}`));
      return rows.length > 0 || undefined;
    });
    const captureMs = Date.now() - sentAt;
    await send("which books did I read?");

    const traces = await poll(
      "two traces tagged bot and message",
      async () => {
        const found = (await langfuseTraces(settings, userId)).filter(
          (t) => new Date(t.timestamp ?? 0).getTime() >= startedAt.getTime() - 60_000,
        );
        const ours = found.filter(
          (t) => typeof t.input === "string" && (t.input.includes(title) || /which books did i read/i.test(t.input)),
        );
        return ours.length >= 2 && ours.every((t) => t.output !== undefined && t.output !== null) ? ours : undefined;
      },
      30_000,
    );
    const recall = traces.find((t) => /which books/i.test(String(t.input)));
    expect(String(recall?.output ?? "").includes(title), `the recall reply does not name the book: ${JSON.stringify(recall?.output)}`);
    expect(captureMs <= REPLY_BUDGET_MS, `the book was stored ${captureMs} ms after the message (budget ${REPLY_BUDGET_MS} ms)`);
    return `book stored in ${captureMs} ms, recalled, 2 traces tagged bot+message`;
  } finally {
    await db.close();
  }
}

interface LangfuseTrace {
  id: string;
  input?: unknown;
  output?: unknown;
  tags?: string[];
  timestamp?: string;
}

async function langfuseTraces(settings: Settings, userId: string): Promise<LangfuseTrace[]> {
  const base = (settings.LANGFUSE_BASE_URL ?? "https://cloud.langfuse.com").replace(/\/+$/, "");
  const query = new URLSearchParams({ userId, limit: "20" });
  for (const tag of ["bot", "message"]) query.append("tags", tag);
  const auth = Buffer.from(`${settings.LANGFUSE_PUBLIC_KEY}:${settings.LANGFUSE_SECRET_KEY}`).toString("base64");
  const response = await fetch(`${base}/api/public/traces?${query}`, {
    headers: { authorization: `Basic ${auth}` },
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  if (!response.ok) throw new Error(`Langfuse API answered ${response.status}`);
  return ((await response.json()) as { data: LangfuseTrace[] }).data;
}

async function getJson(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url, { headers, signal: AbortSignal.timeout(TIMEOUT_MS) });
  const text = await response.text();
  try {
    return { status: response.status, body: JSON.parse(text) as Record<string, unknown> };
  } catch {
    return { status: response.status, body: { text: text.slice(0, 200) } };
  }
}

async function poll<T>(what: string, read: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function expect(condition: boolean, failure: string): asserts condition {
  if (!condition) throw new Error(failure);
}

runMain(import.meta, async () => {
  const { values } = parseArgs({ options: { "base-url": { type: "string" }, "env-file": { type: "string" } } });
  const settings = loadSettings(process.env, values["env-file"]);
  const baseUrl = values["base-url"] ?? settings.APP_BASE_URL;
  if (!baseUrl) throw new UsageError("usage: npm run smoke -- --base-url https://soma.example.com (or set APP_BASE_URL)");
  const { ok } = await smoke({ baseUrl, settings });
  return ok ? 0 : 1;
});
