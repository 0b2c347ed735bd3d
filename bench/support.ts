// What the end-to-end benchmarks share: Soma as `npm start` runs it (wrangler dev, the real Worker and
// Durable Objects, the embedded Postgres in a fresh directory) wired to loopback stand-ins for the
// Bot API and an instant OpenAI-compatible model (tests/setup/stand-ins.ts, in this process, so reply
// arrival times are on this process's clock), and the statistics and result files.
import type postgres from "postgres";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { start, type Running } from "../ops/start";
import { startStandIns, type StandIns } from "../tests/setup/stand-ins";
import { freePort } from "../tests/node/helpers";

export interface Bench {
  app: Running;
  standIns: StandIns;
  secret: string;
  /** Posts one Telegram update; resolves with the status and the time the acknowledgement took. */
  post(chatId: number, updateId: number, text: string): Promise<{ status: number; ackMs: number; sentAt: number }>;
  /** sendMessage calls the Bot API stand-in received for `chatId`, with arrival times (performance.now()). */
  replies(chatId: number): Promise<Array<{ text: string; hr: number }>>;
  /** The same for `method` (e.g. sendMessageDraft: the reply as it is written). */
  calls(chatId: number, method: string): Promise<Array<{ text: string; hr: number }>>;
  stop(): Promise<void>;
}

export async function startBench(settings: Record<string, string> = {}): Promise<Bench> {
  const standIns = await startStandIns();
  const secret = "bench-webhook-secret";
  const app = await start(
    {
      PATH: process.env.PATH ?? "",
      PORT: String(await freePort()),
      SOMA_STATE_DIR: mkdtempSync(`${tmpdir()}/soma-bench-`),
      TELEGRAM_BOT_TOKEN: "777000:bench-token",
      TELEGRAM_WEBHOOK_SECRET: secret,
      TELEGRAM_API_ROOT: standIns.url,
      AI_PROVIDER: "openai-compatible",
      AI_BASE_URL: `${standIns.url}/v1`,
      AI_MODEL: "instant",
      // Workflow events go where production sends them: Inngest (here its stand-in), in cloud mode.
      INNGEST_EVENT_KEY: "bench-event-key",
      INNGEST_SIGNING_KEY: `signkey-bench-${"0f".repeat(32)}`,
      INNGEST_BASE_URL: process.env.BENCH_INNGEST_URL ?? standIns.url,
      ...settings,
    },
    () => {},
  );
  const calls = async (chatId: number, method: string) => {
    const answered = (await (await fetch(`${standIns.url}/__calls?chat_id=${chatId}&method=${method}`)).json()) as Array<{
      payload: { text: string };
      view?: { text: string };
      hr: number;
    }>;
    return answered.map((c) => ({ text: c.view?.text ?? c.payload.text, hr: c.hr }));
  };
  return {
    app,
    standIns,
    secret,
    async post(chatId, updateId, text) {
      const sentAt = performance.now();
      const response = await fetch(`${app.url}/api/messenger/webhook`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": secret },
        body: JSON.stringify({
          update_id: updateId,
          message: {
            message_id: updateId % 1_000_000,
            date: Math.floor(Date.now() / 1000),
            chat: { id: chatId, type: "private" },
            from: { id: chatId, is_bot: false, first_name: "Bench" },
            text,
          },
        }),
      });
      await response.arrayBuffer();
      return { status: response.status, ackMs: performance.now() - sentAt, sentAt };
    },
    replies: (chatId) => calls(chatId, "sendMessage"),
    calls,
    async stop() {
      await app.stop();
      await standIns.stop();
    },
  };
}

/** Waits until `chatId` has `count` replies; returns them. */
export async function waitForReplies(bench: Bench, chatId: number, count: number, timeoutMs = 30_000) {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const replies = await bench.replies(chatId);
    if (replies.length >= count) return replies;
    if (performance.now() > deadline) throw new Error(`chat ${chatId}: ${replies.length} of ${count} replies after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

export function round(value: number, digits = 1): number {
  return Number(value.toFixed(digits));
}

export function summary(values: number[]) {
  return {
    n: values.length,
    p50: round(percentile(values, 50)),
    p95: round(percentile(values, 95)),
    p99: round(percentile(values, 99)),
    max: round(Math.max(...values)),
  };
}

export function machine() {
  return { cpu: cpus()[0]?.model ?? "unknown", cores: cpus().length, node: process.version, date: new Date().toISOString() };
}

/** Prints the table and writes bench/results/<name>.md and .json. */
export function writeResults(name: string, title: string, table: string, data: Record<string, unknown>): void {
  console.log(table);
  const meta = machine();
  writeFileSync(new URL(`./results/${name}.json`, import.meta.url), `${JSON.stringify({ ...meta, ...data }, null, 2)}\n`);
  writeFileSync(
    new URL(`./results/${name}.md`, import.meta.url),
    `# ${title}\n\n${meta.cpu} · ${meta.cores} cores · Node ${meta.node} · ${meta.date}\n\n${table}\n`,
  );
}

/** The server's version and pgvector's (`onServer` false: the embedded Postgres). */
export async function serverVersion(sql: postgres.Sql, onServer: boolean): Promise<string> {
  const [row] = await sql<[{ version: string; vector: string }]>`
    select split_part(version(), ' on ', 1) as version, (select extversion from pg_extension where extname = 'vector') as vector`;
  return `${onServer ? row.version : "PGlite (Postgres 17, WASM)"} + pgvector ${row.vector}`;
}

/** A Markdown table. */
export function markdownTable(header: string[], rows: Array<Array<string | number>>): string {
  return [
    `| ${header.join(" | ")} |`,
    `|${header.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");
}

/** A read-only MCP access token for the person signed in with `session` (a cookie), granted through the
 * consent page as a person grants it. */
export async function mcpAccessToken(base: string, session: string): Promise<string> {
  const redirect = "http://127.0.0.1:9/callback";
  const registered = (await (
    await fetch(`${base}/oauth/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_name: "Bench", redirect_uris: [redirect], token_endpoint_auth_method: "none" }),
    })
  ).json()) as { client_id: string };
  const verifier = randomBytes(32).toString("base64url");
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  const params = new URLSearchParams({
    response_type: "code",
    client_id: registered.client_id,
    redirect_uri: redirect,
    scope: "memory:read",
    state: "bench",
    code_challenge: challenge,
    code_challenge_method: "S256",
    resource: `${base}/mcp`,
  });
  const page = await fetch(`${base}/authorize?${params}`, { headers: { cookie: session } });
  const handle = /name="handle" value="([^"]+)"/.exec(await page.text())?.[1];
  const consentCookie = page.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
  if (!handle) throw new Error(`the consent page answered ${page.status} without a form`);
  const decided = await fetch(`${base}/authorize`, {
    method: "POST",
    headers: { cookie: `${session}; ${consentCookie}`, origin: base, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ handle, decision: "approve", scope: "memory:read" }),
  });
  const location = /href="([^"]+)" id="continue"/.exec(await decided.text())?.[1]?.replaceAll("&amp;", "&");
  const code = location ? new URL(location).searchParams.get("code") : null;
  if (!code) throw new Error("consent gave no code");
  const tokens = (await (
    await fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code,
        redirect_uri: redirect,
        client_id: registered.client_id,
        code_verifier: verifier,
      }),
    })
  ).json()) as { access_token: string };
  return tokens.access_token;
}
