// HTTP around the services of service-process.ts: a Telegram update POSTed to a service's webhook, its
// /api/health, the replies the shared stand-in answered, requests held at the stand-in (hang), and
// which of a test's books a reply is about. The Bot API and the model are reached through a tap in the
// test process (startTap) that forwards to the shared stand-in and records each request as it ARRIVES:
// the stand-in records a held request only once it is released, and a test has to know that a turn is
// in flight before it pulls the plug.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest, createServer, type IncomingMessage, type Server } from "node:http";
import { tmpdir } from "node:os";
import { WELCOME } from "../../agents/commands/index";
import { FACT_EXTRACTION_MARKER } from "../../agents/fact-extraction";
import { SERVICE_MODEL, held, readProc } from "./service-process";
import { waitFor } from "./wait";

/** POSTs one Telegram update with a text message (or `content`: a voice note, a photo…) to the webhook; resolves to the HTTP status. */
export async function webhook(
  url: string,
  secret: string,
  chatId: number,
  updateId: number,
  content: string | Record<string, unknown>,
): Promise<number> {
  const response = await fetch(`${url}/api/messenger/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": secret },
    body: JSON.stringify({
      update_id: updateId,
      message: {
        message_id: updateId % 1_000_000,
        date: Math.floor(Date.now() / 1000),
        chat: { id: chatId, type: "private" },
        from: { id: chatId, is_bot: false, first_name: "Tess" },
        ...(typeof content === "string" ? { text: content } : content),
      },
    }),
    signal: AbortSignal.timeout(30_000),
  });
  await response.arrayBuffer();
  return response.status;
}

/** Texts of the sendMessage calls the stand-in answered for `chatId`, in arrival order, as the person sees them. */
export async function sent(standIn: string, chatId: number): Promise<string[]> {
  const response = await fetch(`${standIn}/__calls?chat_id=${chatId}&method=sendMessage`);
  const calls = (await response.json()) as Array<{ payload: { text: string }; view?: { text: string }; at: number }>;
  return calls.sort((a, b) => a.at - b.at).map((c) => c.view?.text ?? c.payload.text);
}

/** A random Telegram chat id for one test (the stand-in is shared by the whole run). */
export function randomChatId(): number {
  return 620_000_000 + Math.floor(Math.random() * 9_000_000);
}

/**
 * POST /__hang {target, match} at the stand-in: requests to `target` whose body contains `match` are
 * held. "chat" hangs match this harness's model name by default (so the Worker suite running beside
 * it is never held); Bot API hangs should match a chat id (`"chat_id":123`). A lock across test files
 * is held meanwhile: two files hanging and releasing the same requests would release each other's.
 * Returns the release (POST /__release, then the lock goes).
 */
export async function hang(
  standIn: string,
  target: string,
  match = target === "chat" ? `"model":"${SERVICE_MODEL}"` : "",
  waitMs = 120_000,
): Promise<() => Promise<void>> {
  const lock = `${tmpdir()}/soma-stand-in-hang-${new URL(standIn).port}-${`${target}-${match}`.replace(/\W/g, "_")}`;
  await waitFor(
    () => {
      try {
        mkdirSync(lock);
        writeFileSync(`${lock}/owner`, String(process.pid));
        return true;
      } catch {
        // Held: take it over only if its owner is gone.
        const owner = Number(readFileSyncOr(`${lock}/owner`, "0"));
        if (owner && !readProc(owner)) rmSync(lock, { recursive: true, force: true });
        return false;
      }
    },
    waitMs,
    `the stand-in's "${target}" hang lock`,
  );
  const key = `${standIn} ${target} ${match}`;
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    held.delete(key);
    try {
      await control(standIn, "/__release", target, match);
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  };
  held.set(key, release);
  try {
    await control(standIn, "/__hang", target, match);
  } catch (error) {
    await release().catch(() => {});
    throw error;
  }
  return release;
}

async function control(standIn: string, path: string, target: string, match: string): Promise<void> {
  const response = await fetch(`${standIn}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ target, match }),
  });
  if (!response.ok) throw new Error(`${path} ${target}: ${response.status}`);
  await response.arrayBuffer();
}

function readFileSyncOr(file: string, fallback: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return fallback;
  }
}

interface TappedRequest {
  path: string;
  body: string;
  /** When the request arrived at the tap. */
  at: number;
  /** When the stand-in's answer went back, or when the client gave up (closed its connection) first. */
  answeredAt?: number;
  gaveUpAt?: number;
}

export interface Tap {
  url: string;
  requests: TappedRequest[];
  /** A turn's chat-completion requests (arrived at or after `since`) whose last user message contains `text`. */
  modelRequests(text: string, since?: number): TappedRequest[];
  /**
   * What each memory_capture the model made was about: entity id (from the tool's result) → the name
   * it was called with, read from the conversations the model was sent. The stand-in model's reply to
   * "I read X" quotes the tool result ("Done. Tool said: {"entityId":…}"), not X itself.
   */
  capturedNames(): Map<string, string>;
  /** Bot API calls of `method` to `chatId` that arrived (answered, held, or abandoned). */
  botAttempts(method: string, chatId: number): TappedRequest[];
  stop(): Promise<void>;
}

/**
 * An HTTP forwarder in front of the stand-in that records every request on arrival. A client that
 * gives up closes its connection to the tap, and the tap then drops its own request to the stand-in,
 * so the stand-in sees exactly what it would have seen directly.
 */
export async function startTap(standIn: string): Promise<Tap> {
  const upstream = new URL(standIn);
  const requests: TappedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const record: TappedRequest = { path: req.url ?? "/", body: body.toString("utf8"), at: Date.now() };
      requests.push(record);
      const forward = httpRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: upstream.host, connection: "close" },
          agent: false,
        },
        (answer: IncomingMessage) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          answer.on("end", () => (record.answeredAt ??= Date.now()));
        },
      );
      forward.on("error", () => {
        if (!res.headersSent) res.writeHead(502).end();
        else res.destroy();
      });
      res.on("close", () => {
        if (!res.writableFinished) {
          record.gaveUpAt ??= Date.now();
          forward.destroy();
        }
      });
      forward.end(body);
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const lastUserText = (body: string): string => {
    try {
      const { messages } = JSON.parse(body) as { messages: Array<{ role: string; content: unknown }> };
      const user = [...messages].reverse().find((m) => m.role === "user");
      return typeof user?.content === "string" ? user.content : JSON.stringify(user?.content ?? "");
    } catch {
      return "";
    }
  };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    modelRequests: (text, since = 0) =>
      requests.filter(
        (r) =>
          r.at >= since &&
          r.path.endsWith("/chat/completions") &&
          // A turn's requests, not fact extraction's (agents/fact-extraction.ts), which reads the same words after it.
          !r.body.includes(JSON.stringify(FACT_EXTRACTION_MARKER).slice(1, -1)) &&
          lastUserText(r.body).includes(text),
      ),
    capturedNames: () => {
      const names = new Map<string, string>();
      for (const r of requests.filter((q) => q.path.endsWith("/chat/completions"))) {
        try {
          const { messages } = JSON.parse(r.body) as {
            messages: Array<{
              role: string;
              content?: unknown;
              tool_call_id?: string;
              tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
            }>;
          };
          const calls = new Map<string, string>();
          for (const m of messages) {
            for (const call of m.tool_calls ?? []) {
              if (call.function.name === "memory_capture")
                calls.set(call.id, (JSON.parse(call.function.arguments) as { name: string }).name);
            }
            const name = m.role === "tool" && m.tool_call_id ? calls.get(m.tool_call_id) : undefined;
            const entity = name
              ? /"entityId":"([0-9a-f-]{36})"/.exec(typeof m.content === "string" ? m.content : JSON.stringify(m.content))?.[1]
              : undefined;
            if (name && entity) names.set(entity, name);
          }
        } catch {
          // not a chat request this tap understands
        }
      }
      return names;
    },
    botAttempts: (method, chatId) =>
      requests.filter(
        (r) =>
          r.path.endsWith(`/${method}`) &&
          (() => {
            try {
              return (JSON.parse(r.body) as { chat_id?: unknown }).chat_id === chatId;
            } catch {
              return false;
            }
          })(),
      ),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function health(url: string): Promise<number> {
  const response = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(10_000) });
  await response.arrayBuffer();
  return response.status;
}

/**
 * Which of `names` a reply is about: one it names (after the welcome, which mentions Dune), or the one
 * whose memory_capture produced the entity id the reply quotes. undefined for anything else.
 */
export function subjectOf(text: string, tap: Tap, names: readonly string[]): string | undefined {
  const body = text.startsWith(WELCOME) ? text.slice(WELCOME.length) : text;
  const named = names.filter((name) => body.includes(name));
  if (named.length === 1) return named[0];
  const entity = /"entityId":"([0-9a-f-]{36})"/.exec(body)?.[1];
  const captured = entity ? tap.capturedNames().get(entity) : undefined;
  return captured !== undefined && names.includes(captured) ? captured : undefined;
}
