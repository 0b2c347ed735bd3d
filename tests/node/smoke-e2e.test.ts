// The spec's smoke expectations 1–6, run by `npm run smoke` itself against `npm start` (wrangler dev,
// the real Worker and Durable Object, Postgres) in cloud mode, after `npm run telegram:register`.
// Loopback stand-ins play Telegram, Langfuse (ingestion and public API), Inngest and the model (an
// OpenAI-compatible chat-completions server scripted to call the memory tools).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { smoke } from "../../ops/smoke";
import { start, type Running } from "../../ops/start";
import { registerWebhook } from "../../ops/telegram";
import { freePort } from "./helpers";

const standIn = inject("standInUrl");
const chatId = 700_000_000 + Math.floor(Math.random() * 1e6);
const secrets = {
  TELEGRAM_BOT_TOKEN: `4242${Math.floor(Math.random() * 1e6)}:e2e-token`,
  TELEGRAM_WEBHOOK_SECRET: "e2e-webhook-secret",
  LANGFUSE_PUBLIC_KEY: "pk-lf-e2e",
  LANGFUSE_SECRET_KEY: "sk-lf-e2e",
  INNGEST_EVENT_KEY: "e2e-event-key",
  INNGEST_SIGNING_KEY: `signkey-prod-${"ab".repeat(32)}`,
};
const services = { TELEGRAM_API_ROOT: standIn, LANGFUSE_BASE_URL: standIn, INNGEST_BASE_URL: standIn };
let app: Running;

beforeAll(async () => {
  app = await start(
    {
      PORT: String(await freePort()),
      DATABASE_URL: inject("databaseUrl"),
      SOMA_STATE_DIR: mkdtempSync(`${tmpdir()}/soma-e2e-`),
      ...secrets,
      ...services,
      AI_PROVIDER: "openai-compatible",
      AI_BASE_URL: `${standIn}/v1`,
      AI_MODEL: "stand-in",
    },
    () => {},
  );
});
afterAll(async () => {
  await app?.stop();
});

describe("npm run smoke against npm start", () => {
  it("passes 1–6 after telegram:register, with replies inside the spec's 3–5 s", async () => {
    const settings = { ...secrets, ...services, APP_BASE_URL: app.url, DATABASE_URL: inject("databaseUrl"), SMOKE_TELEGRAM_CHAT_ID: String(chatId) };
    const registered: string[] = [];
    await registerWebhook(settings, (line) => registered.push(line));
    expect(registered.join("\n")).toContain(`${app.url}/api/messenger/webhook`);
    expect(registered.join("\n")).not.toContain(secrets.TELEGRAM_WEBHOOK_SECRET);

    const lines: string[] = [];
    const { ok, rows } = await smoke({ baseUrl: app.url, settings, log: (line) => lines.push(line) });
    expect(rows.map((r) => [r.check, r.ok])).toEqual([
      ["tls", true],
      ["1 health", true],
      ["2 workflows", true],
      ["3 login", true],
      ["4 chat", true],
      ["5 webhook", true],
      ["6 e2e", true],
    ]);
    expect(ok).toBe(true);
    console.log(lines.join("\n"));

    // What the person saw in Telegram, timed at the Bot API: each reply within the spec's budget.
    const calls = (await (await fetch(`${standIn}/__calls?chat_id=${chatId}&method=sendMessage`)).json()) as Array<{ payload: { text: string }; at: number }>;
    expect(calls).toHaveLength(3);
    expect(calls[1]!.payload.text).toMatch(/^Done\. Tool said: .*"created":true/);
    expect(calls[2]!.payload.text).toMatch(/^Done\. Tool said: .*"name":"Smoke Test /);
  });

  it("fails (exit 1) when a check fails: a pending update, a plain-http public address", async () => {
    const settings = { ...secrets, ...services, APP_BASE_URL: app.url };
    await fetch(`${standIn}/__pending`, { method: "POST", body: JSON.stringify({ token: secrets.TELEGRAM_BOT_TOKEN, count: 3 }) });
    try {
      const { ok, rows } = await smoke({ baseUrl: app.url, settings, log: () => {} });
      expect(ok).toBe(false);
      expect(rows.find((r) => r.check === "5 webhook")).toMatchObject({ ok: false, detail: expect.stringContaining("pending_update_count 3") });
    } finally {
      await fetch(`${standIn}/__pending`, { method: "POST", body: JSON.stringify({ token: secrets.TELEGRAM_BOT_TOKEN, count: 0 }) });
    }
    const plain = await smoke({ baseUrl: "http://soma.example.com", settings, checks: "1-5", log: () => {} });
    expect(plain.rows[0]).toMatchObject({ check: "tls", ok: false, detail: expect.stringContaining("not https") });
  });
});
