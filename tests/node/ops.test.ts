// The operations commands against `npm start` (wrangler dev, the real Worker and Durable Object,
// Postgres) in cloud mode: telegram:register, the spec's smoke 1–6 (`npm run smoke`), deploy with its
// automatic rollback, gradual deploys, rollback and versions (secrets:check and secrets:push need no
// running service: tests/node/secrets-check.test.ts). Loopback stand-ins play Telegram, Langfuse
// (ingestion and public API), Inngest and the model (an OpenAI-compatible chat-completions server
// scripted to call the memory tools); wrangler's deployment commands run against
// tests/node/fixtures/wrangler-stub.mjs (WRANGLER_BIN).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { deploy } from "../../ops/deploy";
import { listVersions, rollback } from "../../ops/rollback";
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
      // The database the worker tests use at the same time: its login role keeps the password they
      // connect with (npm start's setup would otherwise set one of its own and lock them out).
      DATABASE_WORKER_PASSWORD: decodeURIComponent(new URL(inject("workerDatabaseUrl")).password),
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
    const settings = {
      ...secrets,
      ...services,
      APP_BASE_URL: app.url,
      DATABASE_URL: inject("databaseUrl"),
      SMOKE_TELEGRAM_CHAT_ID: String(chatId),
    };
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
    const calls = (await (await fetch(`${standIn}/__calls?chat_id=${chatId}&method=sendMessage`)).json()) as Array<{
      view: { text: string };
      at: number;
    }>;
    expect(calls).toHaveLength(3);
    expect(calls[1]!.view.text).toMatch(/^Done\. Tool said: .*"created":true/);
    expect(calls[2]!.view.text).toMatch(/^Done\. Tool said: .*"name":"Smoke Test /);
  });

  it("fails (exit 1) when a check fails: a pending update, a plain-http public address", async () => {
    const settings = { ...secrets, ...services, APP_BASE_URL: app.url };
    await fetch(`${standIn}/__pending`, { method: "POST", body: JSON.stringify({ token: secrets.TELEGRAM_BOT_TOKEN, count: 3 }) });
    try {
      const { ok, rows } = await smoke({ baseUrl: app.url, settings, log: () => {} });
      expect(ok).toBe(false);
      expect(rows.find((r) => r.check === "5 webhook")).toMatchObject({
        ok: false,
        detail: expect.stringContaining("pending_update_count 3"),
      });
    } finally {
      await fetch(`${standIn}/__pending`, { method: "POST", body: JSON.stringify({ token: secrets.TELEGRAM_BOT_TOKEN, count: 0 }) });
    }
    const plain = await smoke({ baseUrl: "http://soma.example.com", settings, checks: "1-5", log: () => {} });
    expect(plain.rows[0]).toMatchObject({ check: "tls", ok: false, detail: expect.stringContaining("not https") });
  });
});

describe("the commands as commands (exit codes, output)", () => {
  const tsx = (args: string[], env: Record<string, string> = {}) =>
    spawnSync("node_modules/.bin/tsx", args, { encoding: "utf8", env: { PATH: process.env.PATH, ...env } });

  it("telegram:info prints getWebhookInfo without the token; smoke exits 2 without a base URL and 1 when a check fails (a wrong signing key)", () => {
    const info = tsx(["ops/telegram.ts", "info"], { TELEGRAM_BOT_TOKEN: secrets.TELEGRAM_BOT_TOKEN, TELEGRAM_API_ROOT: standIn });
    expect(info.status).toBe(0);
    expect(info.stdout).toContain(`"url": "${app.url}/api/messenger/webhook"`);
    expect(info.stdout + info.stderr).not.toContain(secrets.TELEGRAM_BOT_TOKEN);

    const usage = tsx(["ops/smoke.ts"]);
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain("usage: npm run smoke -- --base-url");

    // A signing key other than the deployment's: the plain introspection passes, the signed one is refused.
    const failing = tsx(["ops/smoke.ts", "--base-url", app.url], {
      TELEGRAM_BOT_TOKEN: secrets.TELEGRAM_BOT_TOKEN,
      TELEGRAM_API_ROOT: standIn,
      INNGEST_SIGNING_KEY: `signkey-test-${"0".repeat(64)}`,
    });
    expect(failing.status).toBe(1);
    expect(failing.stdout).toMatch(/2 workflows\s+FAIL\s+signed with INNGEST_SIGNING_KEY: status 401/);
    expect(failing.stdout).toMatch(/1 health\s+ok/);

    // Without a key here, smoke checks what the spec asks of a plain GET, and says it did not sign.
    const unsigned = tsx(["ops/smoke.ts", "--base-url", app.url], {
      TELEGRAM_BOT_TOKEN: secrets.TELEGRAM_BOT_TOKEN,
      TELEGRAM_API_ROOT: standIn,
    });
    expect(unsigned.stdout).toMatch(
      /2 workflows\s+ok\s+has_event_key true, has_signing_key true, mode cloud, function_count 8 \(not signed/,
    );
  });
});

// ---- deploy, rollback, versions (wrangler stand-in) ----

const stub = `${process.cwd()}/tests/node/fixtures/wrangler-stub.mjs`;
let stubState: string;

interface StubState {
  versions: Array<{ id: string }>;
  deployment: { versions: Array<{ version_id: string; percentage: number }> } | null;
  secrets: Record<string, string>;
  calls: Array<{ args: string[]; env: { CLOUDFLARE_ACCOUNT_ID: string | null; hasToken: boolean } }>;
}
const readStub = () => JSON.parse(readFileSync(stubState, "utf8")) as StubState;
const commands = () =>
  readStub().calls.map((c) => {
    const leading = c.args.findIndex((a) => a.startsWith("-"));
    return (leading < 0 ? c.args : c.args.slice(0, leading)).slice(0, 2).join(" ");
  });

function opsSettings() {
  return {
    ...secrets,
    ...services,
    APP_BASE_URL: app.url,
    WRANGLER_BIN: stub,
    CLOUDFLARE_ACCOUNT_ID: "account-123",
    CLOUDFLARE_API_TOKEN: "cf-token-secret",
  };
}

async function registrations(): Promise<number> {
  return ((await (await fetch(`${standIn}/__inngest/registrations`)).json()) as unknown[]).length;
}

async function setPending(count: number) {
  await fetch(`${standIn}/__pending`, { method: "POST", body: JSON.stringify({ token: secrets.TELEGRAM_BOT_TOKEN, count }) });
}

describe("npm run deploy / rollback / versions", () => {
  beforeEach(() => {
    stubState = `${mkdtempSync(`${tmpdir()}/soma-wrangler-stub-`)}/state.json`;
    process.env.STUB_WRANGLER_STATE = stubState;
  });

  it("deploys at 100%, re-syncs Inngest, smokes 1–5; a failed smoke rolls back automatically", async () => {
    await registerWebhook(opsSettings(), () => {});
    const settings = opsSettings();
    const log: string[] = [];
    const synced = await registrations();

    expect(await deploy(settings, { log: (l) => log.push(l) })).toBe(true);
    const [v1] = readStub().versions;
    expect(log.join("\n")).toContain("nothing yet (first deploy)");
    expect(log.join("\n")).toContain(`version ${v1!.id} serves 100% of traffic`);
    expect(log.join("\n")).toMatch(/PUT \/api\/workflows → 200/);
    expect(log.join("\n")).toContain("smoke: 6/6 passed");
    expect(await registrations()).toBe(synced + 1);
    // Cloudflare credentials reach wrangler through its environment, never its arguments.
    expect(
      readStub().calls.every(
        (c) => c.env.CLOUDFLARE_ACCOUNT_ID === "account-123" && c.env.hasToken && !c.args.join(" ").includes("cf-token-secret"),
      ),
    ).toBe(true);

    expect(await deploy(settings, { log: () => {} })).toBe(true);
    const v2 = readStub().versions[1]!.id;

    await setPending(2);
    try {
      const failed: string[] = [];
      expect(await deploy(settings, { log: (l) => failed.push(l) })).toBe(false);
      expect(failed.join("\n")).toContain(`rolled back automatically, ${v2} serves 100% again`);
      expect(readStub().deployment?.versions).toEqual([{ version_id: v2, percentage: 100 }]);
      expect(commands().at(-1)).toBe(`rollback ${v2}`);
    } finally {
      await setPending(0);
    }
  });

  it("--gradual 10 gives the new version 10% and the current one 90%", async () => {
    const settings = opsSettings();
    await deploy(settings, { log: () => {} });
    const current = readStub().versions[0]!.id;
    const log: string[] = [];
    expect(await deploy(settings, { gradual: 10, log: (l) => log.push(l) })).toBe(true);
    const next = readStub().versions[1]!.id;
    expect(readStub().deployment?.versions).toEqual([
      { version_id: next, percentage: 10 },
      { version_id: current, percentage: 90 },
    ]);
    expect(commands()).toContain("versions upload");
    expect(log.join("\n")).toContain(`version ${next} serves 10%, ${current} keeps 90%`);
    await expect(deploy(settings, { gradual: 100, log: () => {} })).rejects.toThrow(/1 to 99/);
  });

  it("rollback restores the previous (or the named) version at once, then smokes; versions shows traffic", async () => {
    const settings = opsSettings();
    for (let i = 0; i < 3; i++) await deploy(settings, { log: () => {} });
    const [v1, v2, v3] = readStub().versions.map((v) => v.id);
    const log: string[] = [];
    expect(await rollback(settings, { log: (l) => log.push(l) })).toBe(true);
    expect(readStub().deployment?.versions).toEqual([{ version_id: v2, percentage: 100 }]);
    expect(log.join("\n")).toContain(`rollback  ${v3} → ${v2}`);
    expect(await rollback(settings, { to: v1!, log: () => {} })).toBe(true);
    expect(readStub().deployment?.versions).toEqual([{ version_id: v1, percentage: 100 }]);

    const listing: string[] = [];
    await listVersions(settings, (l) => listing.push(l));
    expect(listing).toHaveLength(4);
    expect(listing.find((l) => l.startsWith(v1!))).toMatch(/100%/);
    expect(listing.find((l) => l.startsWith(v3!))).not.toMatch(/%/);
  });

  it("stops at a wrangler failure before touching anything else", async () => {
    process.env.STUB_WRANGLER_FAIL = "deploy";
    const synced = await registrations();
    try {
      await expect(deploy(opsSettings(), { log: () => {} })).rejects.toThrow(/wrangler deploy failed \(exit 1\)/);
    } finally {
      delete process.env.STUB_WRANGLER_FAIL;
    }
    expect(await registrations()).toBe(synced);
  });
});
