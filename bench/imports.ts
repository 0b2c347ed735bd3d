// `npm run bench:imports`: the time to import a ChatGPT export of 5,000 conversations (BENCH_IMPORT_CONVERSATIONS)
// into Soma as `npm start` runs it (wrangler dev, workerd, the embedded Postgres; the import read by the
// person's agent, as without Inngest), the way the web app does it: the export read and split into batches
// in this process (as in the browser), the batches posted, the import started, its progress polled to
// the end. Twice: with the offline model, and with a model stand-in that answers every call after 500 ms
// (BENCH_IMPORT_LATENCY_MS), an OpenAI-compatible server in this process that captures "I just finished
// reading …" with the memory_capture tool (two calls: the tool call, then the answer) and finds no facts.
// Each conversation holds one message of the person's and one answer; every fifth message names a book.
// Writes bench/results/imports.json and .md.
import { createServer } from "node:http";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { Database } from "../db/database";
import { createPerson, createSession } from "../db/repositories/auth";
import { start } from "../ops/start";
import { readChatGpt } from "../platform/conversation-imports";
import { freePort } from "../tests/node/helpers";
import { markdownTable, round, writeResults } from "./support";

const CONVERSATIONS = Number(process.env.BENCH_IMPORT_CONVERSATIONS ?? 5_000);
const LATENCY_MS = Number(process.env.BENCH_IMPORT_LATENCY_MS ?? 500);
const BATCH = 100;

/** A ChatGPT conversations.json of `n` conversations, a day apart. */
function exportOf(n: number): unknown[] {
  const t0 = Date.UTC(2023, 0, 1) / 1000;
  return Array.from({ length: n }, (_, i) => {
    const at = t0 + i * 3600;
    const said = i % 5 === 0 ? `I just finished reading Bench Book ${i}` : `What should I cook tonight, with ${i} guests?`;
    return {
      title: `Conversation ${i}`,
      create_time: at,
      conversation_id: `bench-${i}`,
      current_node: "a",
      mapping: {
        u: {
          id: "u",
          parent: null,
          children: ["a"],
          message: { author: { role: "user" }, create_time: at, content: { content_type: "text", parts: [said] } },
        },
        a: {
          id: "a",
          parent: "u",
          children: [],
          message: { author: { role: "assistant" }, create_time: at + 5, content: { content_type: "text", parts: ["Here is an idea."] } },
        },
      },
    };
  });
}

/** An OpenAI-compatible model that answers after `latencyMs`: a capture for a book, no facts, else nothing. */
async function slowModel(latencyMs: number): Promise<{ url: string; calls: () => number; stop: () => void }> {
  let calls = 0;
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      calls++;
      const request = JSON.parse(body || "{}") as {
        messages?: Array<{ role: string; content: unknown }>;
        response_format?: { type?: string };
      };
      const messages = request.messages ?? [];
      const user = String(messages.findLast((m) => m.role === "user")?.content ?? "");
      const book = /I just finished reading (.+)$/.exec(user)?.[1];
      const message = request.response_format?.type?.startsWith("json")
        ? { role: "assistant", content: JSON.stringify({ facts: [] }) }
        : messages.at(-1)?.role === "tool" || !book
          ? { role: "assistant", content: "Nothing more to save." }
          : {
              role: "assistant",
              content: null,
              tool_calls: [
                {
                  id: `call-${calls}`,
                  type: "function",
                  function: { name: "memory_capture", arguments: JSON.stringify({ type: "book", name: book }) },
                },
              ],
            };
      const answer = {
        id: `chatcmpl-${calls}`,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: "bench-slow",
        choices: [{ index: 0, message, finish_reason: "tool_calls" in message ? "tool_calls" : "stop" }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      };
      setTimeout(() => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(answer));
      }, latencyMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}/v1`, calls: () => calls, stop: () => server.close() };
}

async function run(label: string, settings: Record<string, string>) {
  const app = await start(
    {
      PATH: process.env.PATH ?? "",
      PORT: String(await freePort()),
      SOMA_STATE_DIR: mkdtempSync(`${tmpdir()}/soma-bench-imports-`),
      IMPORT_MODEL_CALLS_PER_DAY: String(CONVERSATIONS * 4),
      ...settings,
    },
    () => {},
  );
  const db = new Database(app.databaseUrl, { max: 1 });
  try {
    const person = await createPerson(db, { displayName: "bench-imports" });
    const cookie = `__Host-soma_session=${await createSession(db, person.id, 24 * 3600)}`;
    const headers = { cookie, origin: app.url, "content-type": "application/json" };
    const api = async (path: string, method = "GET", body?: unknown) => {
      const response = await fetch(`${app.url}/api/imports${path}`, { method, headers, ...(body ? { body: JSON.stringify(body) } : {}) });
      if (!response.ok) throw new Error(`${method} /api/imports${path}: ${response.status} ${await response.text()}`);
      return (await response.json()) as { import: { id: string } } & { imports: Array<Record<string, number | string>> };
    };
    const t0 = performance.now();
    const conversations = readChatGpt(JSON.parse(JSON.stringify(exportOf(CONVERSATIONS))));
    const readMs = performance.now() - t0;
    const t1 = performance.now();
    const { import: job } = await api("", "POST", { origin: "chatgpt", conversations: conversations.length, from: null, to: null });
    for (let i = 0; i < conversations.length; i += BATCH) {
      await api(`/${job.id}/conversations`, "POST", { conversations: conversations.slice(i, i + BATCH) });
    }
    const sentMs = performance.now() - t1;
    const t2 = performance.now();
    await api(`/${job.id}/start`, "POST");
    let last: Record<string, number | string> = {};
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      last = (await api("")).imports[0] ?? {};
      if (last.state !== "running") break;
      if (Number(last.done) % 500 < 10) console.log(`${label}: ${last.done} of ${last.received} read`);
    }
    const readAllMs = performance.now() - t2;
    const messages = Number(last.userMessages);
    return {
      label,
      state: String(last.state),
      conversations: Number(last.received),
      messages,
      parseSeconds: round(readMs / 1000, 2),
      sendSeconds: round(sentMs / 1000, 1),
      readSeconds: round(readAllMs / 1000, 1),
      messagesPerSecond: round(messages / (readAllMs / 1000), 1),
      memories: Number(last.memories),
      facts: Number(last.facts),
    };
  } finally {
    await db.close();
    await app.stop();
  }
}

async function main() {
  const offline = await run("offline model", {});
  console.log(offline);
  const model = await slowModel(LATENCY_MS);
  let slow: Awaited<ReturnType<typeof run>>;
  try {
    slow = await run(`model stand-in, ${LATENCY_MS} ms a call`, {
      AI_PROVIDER: "openai-compatible",
      AI_BASE_URL: model.url,
      AI_MODEL: "bench-slow",
    });
  } finally {
    model.stop();
  }
  console.log(slow, { modelCalls: model.calls() });
  const rows = [offline, slow].map((r) => [
    r.label,
    r.state,
    r.conversations,
    r.messages,
    r.parseSeconds,
    r.sendSeconds,
    r.readSeconds,
    r.messagesPerSecond,
    r.memories,
  ]);
  writeResults(
    "imports",
    `Importing a ChatGPT export of ${CONVERSATIONS.toLocaleString("en-US")} conversations`,
    markdownTable(
      ["model", "state", "conversations", "your messages", "read in the browser s", "sent s", "read by Soma s", "messages/s", "memories"],
      rows,
    ),
    { conversations: CONVERSATIONS, latencyMs: LATENCY_MS, offline, slow, modelCalls: model.calls() },
  );
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
