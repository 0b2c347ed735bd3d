// Guards issue 26's "a real model nearby is not ignored": `npm start` with no AI_PROVIDER asks the usual
// local servers for their models (ops/local-model.ts) and uses the first that answers with a chat model —
// detected, not detected, answering slowly, answering something else — saying so in its banner; a turn
// then goes to that server; and AI_PROVIDER=offline always wins, without asking anyone.
import { createServer, type Server } from "node:http";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { afterAll, describe, expect, inject, it } from "vitest";
import { findLocalModel, LOCAL_MODEL_TIMEOUT_MS } from "../../ops/local-model";
import { start, type Running } from "../../ops/start";
import { LOCAL_CHAT_MODEL } from "../setup/stand-ins";
import { freePort } from "./helpers";

const standIn = inject("standInUrl");
const servers: Server[] = [];
const running: Running[] = [];
afterAll(async () => {
  for (const r of running) await r.stop();
  for (const server of servers) await new Promise((resolve) => server.close(resolve));
});

/** A server on a free port that answers GET /v1/models after `delayMs` with `status` and `body`. */
async function modelServer(body: unknown, options: { delayMs?: number; status?: number } = {}) {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    setTimeout(() => {
      res.writeHead(options.status ?? 200, { "content-type": typeof body === "string" ? "text/html" : "application/json" });
      res.end(typeof body === "string" ? body : JSON.stringify(body));
    }, options.delayMs ?? 0);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return { port: (server.address() as { port: number }).port, requests };
}

const models = (...ids: string[]) => ({ object: "list", data: ids.map((id) => ({ id, object: "model" })) });

describe("findLocalModel", () => {
  it("finds a server that lists a chat model, passing over its embedding models", async () => {
    const ollama = await modelServer(models("nomic-embed-text", "llama3.2"));
    expect(await findLocalModel([{ server: "Ollama", port: ollama.port }])).toEqual({
      server: "Ollama",
      baseUrl: `http://127.0.0.1:${ollama.port}/v1`,
      model: "llama3.2",
    });
    expect(ollama.requests).toEqual(["GET /v1/models"]);
  });

  it("finds nothing where nothing listens, where something else answers, or where only embeddings are served", async () => {
    const html = await modelServer("<html>a router's page</html>");
    const missing = await modelServer({ error: "not found" }, { status: 404 });
    const embeddings = await modelServer(models("bge-m3"));
    const nothing = await freePort();
    const servers = [html, missing, embeddings].map(({ port }, i) => ({ server: `s${i}`, port }));
    expect(await findLocalModel([...servers, { server: "none", port: nothing }])).toBeNull();
  });

  it("does not wait for a server that answers slowly, and prefers the usual order among those that answer", async () => {
    const slow = await modelServer(models("slow-model"), { delayMs: 5_000 });
    const lmStudio = await modelServer(models("qwen2.5-7b-instruct"));
    const llamaCpp = await modelServer(models("gguf-model"));
    const started = Date.now();
    const found = await findLocalModel([
      { server: "Ollama", port: slow.port },
      { server: "LM Studio", port: lmStudio.port },
      { server: "llama.cpp's server", port: llamaCpp.port },
    ]);
    expect(Date.now() - started).toBeLessThan(LOCAL_MODEL_TIMEOUT_MS + 1_500);
    expect(found?.server).toBe("LM Studio");
    expect(found?.model).toBe("qwen2.5-7b-instruct");
  });
});

describe("npm start with no AI_PROVIDER", () => {
  it("uses the model server it finds on this machine, says so once in its banner, and a turn goes there", async () => {
    const lines: string[] = [];
    const app = await start(
      {
        PORT: String(await freePort()),
        SOMA_STATE_DIR: mkdtempSync(`${tmpdir()}/soma-local-model-`),
        SOMA_LOCAL_MODEL_PORTS: new URL(standIn).port,
        DATABASE_URL: "",
      },
      (line) => lines.push(line),
    );
    running.push(app);
    expect(lines.filter((line) => line.startsWith("  model"))).toEqual([
      `  model     openai-compatible · ${LOCAL_CHAT_MODEL} at ${standIn}/v1 (an OpenAI-compatible server, found on this machine; AI_PROVIDER=offline npm start for the built-in model)`,
    ]);

    const signIn = await fetch(`${app.url}/auth/dev`, { method: "POST", headers: { origin: app.url } });
    const cookie = signIn.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .join("; ");
    const words = `Reply with: found ${crypto.randomUUID()}`;
    const chat = await fetch(`${app.url}/api/chat`, {
      method: "POST",
      headers: { cookie, "content-type": "application/json" },
      body: JSON.stringify({ message: words }),
    });
    expect(chat.status).toBe(200);
    expect(await chat.text()).toContain('"type":"text-delta"');
    const asked = (await (await fetch(`${standIn}/__requests`)).json()) as Array<{ model: string; messages: Array<{ content: unknown }> }>;
    const request = asked.find((r) => JSON.stringify(r.messages).includes(words));
    expect(request?.model).toBe(LOCAL_CHAT_MODEL);
  });

  it("keeps the offline model when AI_PROVIDER=offline, without asking any server", async () => {
    const ollama = await modelServer(models("llama3.2"));
    const lines: string[] = [];
    const app = await start(
      {
        PORT: String(await freePort()),
        SOMA_STATE_DIR: mkdtempSync(`${tmpdir()}/soma-offline-`),
        SOMA_LOCAL_MODEL_PORTS: String(ollama.port),
        AI_PROVIDER: "offline",
        DATABASE_URL: "",
      },
      (line) => lines.push(line),
    );
    running.push(app);
    expect(lines.find((line) => line.startsWith("  model"))).toMatch(/^ {2}model {5}offline: built in/);
    expect(ollama.requests).toEqual([]);
  });
});
