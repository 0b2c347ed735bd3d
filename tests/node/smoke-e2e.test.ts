// Guards the spec's end-to-end expectation (smoke 6) against `npm start` itself — wrangler dev, the
// real Worker and Durable Object, Postgres — with loopback stand-ins for Telegram, Langfuse and the model
// (an OpenAI-compatible chat-completions server scripted to call the memory tools): /start, "I just
// finished reading …" answered within 3–5 s with a `book` row, "which books did I read?" answered
// through memory_recall, and two traces tagged bot and message.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { start, type Running } from "../../ops/start";
import { freePort } from "./helpers";

const standIn = inject("standInUrl");
const SECRET = "e2e-webhook-secret";
const chatId = 700_000_000 + Math.floor(Math.random() * 1e6);
let app: Running;


beforeAll(async () => {
  app = await start(
    {
      PORT: String(await freePort()),
      DATABASE_URL: inject("databaseUrl"),
      SOMA_STATE_DIR: mkdtempSync(`${tmpdir()}/soma-e2e-`),
      TELEGRAM_BOT_TOKEN: "424242:e2e-token",
      TELEGRAM_WEBHOOK_SECRET: SECRET,
      TELEGRAM_API_ROOT: standIn,
      LANGFUSE_PUBLIC_KEY: "pk-lf-e2e",
      LANGFUSE_SECRET_KEY: "sk-lf-e2e",
      LANGFUSE_BASE_URL: standIn,
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

let updateId = Math.floor(Math.random() * 1e8);
async function send(text: string): Promise<number> {
  const sentAt = Date.now();
  const response = await fetch(`${app.url}/api/messenger/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": SECRET },
    body: JSON.stringify({
      update_id: ++updateId,
      message: { message_id: updateId, date: Math.floor(sentAt / 1000), chat: { id: chatId, type: "private" }, from: { id: chatId, is_bot: false, first_name: "Eve" }, text },
    }),
  });
  expect(response.status).toBe(200);
  return sentAt;
}

async function replies(count: number): Promise<Array<{ text: string; at: number }>> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const calls = (await (await fetch(`${standIn}/__calls?chat_id=${chatId}&method=sendMessage`)).json()) as Array<{ payload: { text: string }; at: number }>;
    if (calls.length >= count) return calls.map((c) => ({ text: c.payload.text, at: c.at }));
    if (Date.now() > deadline) throw new Error(`expected ${count} replies, got ${JSON.stringify(calls)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("smoke 6, end to end against npm start", () => {
  it("remembers a book from Telegram and recalls it, traced", async () => {
    await send("/start");
    await replies(1);

    const sentAt = await send("I just finished reading Project Hail Mary");
    const [, noted] = await replies(2);
    const replyMs = noted!.at - sentAt;
    expect(noted!.text).toMatch(/^Done\. Tool said: .*"created":true/);
    expect(replyMs).toBeLessThan(5000);

    const owner = postgres(inject("databaseUrl"), { max: 1, onnotice: () => {} });
    try {
      const rows = await owner`select e.type, e.name from entities e join auth.users u on u.id = e.user_id where u.telegram_user_id = ${chatId}`;
      expect(rows.map((r) => ({ ...r }))).toEqual([{ type: "book", name: "Project Hail Mary" }]);
      const [person] = await owner`select id from auth.users where telegram_user_id = ${chatId}`;

      const askedAt = await send("which books did I read?");
      const [, , recalled] = await replies(3);
      // The scripted model answers with what memory_recall returned: the book, found by type.
      expect(recalled!.text).toMatch(/^Done\. Tool said: .*"name":"Project Hail Mary"/);
      console.log(`smoke 6 reply times (webhook → sendMessage): capture ${replyMs} ms, recall ${recalled!.at - askedAt} ms`);

      const deadline = Date.now() + 10_000;
      let traces: Array<{ type: string; body: { id: string; userId?: string; tags?: string[]; name?: string; traceId?: string } }> = [];
      for (;;) {
        const events = (await (await fetch(`${standIn}/__langfuse`)).json()) as typeof traces;
        traces = events.filter((e) => e.type === "trace-create" && e.body.userId === person!.id);
        if (new Set(traces.map((t) => t.body.id)).size >= 2 || Date.now() > deadline) {
          const ids = new Set(traces.map((t) => t.body.id));
          expect(ids.size).toBe(2);
          for (const trace of traces) expect(trace.body.tags).toEqual(["bot", "message"]);
          const spans = events.filter((e) => e.type === "span-create" && ids.has(e.body.traceId ?? "")).map((e) => e.body.name);
          expect(spans).toContain("tool:memory_recall");
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await owner.end({ timeout: 1 });
    }
  });
});
