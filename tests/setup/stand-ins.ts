// Longer than 450 lines: one server plays every outside service, and its single routing table reads
// best in one place (each service is a few lines of it).
// Local HTTP stand-ins for the services Soma talks to, on 127.0.0.1, shared by the test suites:
//   Bot API           POST /bot<token>/<method>   (records every call; failures can be injected; a multipart
//                     upload such as sendDocument is recorded with each file as {filename, size, text})
//   chat completions  POST /v1/chat/completions   (an OpenAI-style server with a scripted model; a user
//                                                  message with POISON in it is refused with 400; one that
//                                                  starts "Reply with:" is answered with the rest of it)
//   model list        GET /v1/models                (as Ollama and LM Studio list theirs)
//   embeddings        POST /v1/embeddings
//   speech to text    POST /v1/audio/transcriptions   (OpenAI's multipart shape; a scripted listener: a file whose
//                                                      bytes read "SPEECH: <words>" says <words>, "OUTAGE" → 503)
//   Bot API files     getFile and GET /file/bot<token>/<path> serve what POST /__files {fileId, base64, size?}
//                     put there (a size over 20 MB is refused by getFile, as Telegram does)
//   Langfuse          POST /api/public/ingestion       (batches kept; GET /__langfuse lists the events)
//   Google OAuth      POST /google/token               (code "good-<sub>" → tokens with an ID token for <sub>)
//                     POST /google/revoke              (recorded; a token containing "unknown" → 400 as Google does)
//   account erasure   POST /gmail/v1/users/me/stop, DELETE /api/public/traces (Langfuse; the traces go),
//                     POST /api/projects/<id>/persons/bulk_delete/ (PostHog): recorded, GET /__erasure lists them
// Control: GET /__calls?chat_id=&method= lists recorded Bot API calls, POST /__fail injects errors,
// GET /__requests lists chat-completion requests (answered ones), GET /__held?target=&match= how many a
// hang holds now, POST /__hang {target, match} holds every request to
// a target ("chat" for chat completions, "embeddings", "google-revoke", or a Bot API method) whose body contains
// `match` (e.g. a chat id or a model name, so that suites running at the same time never hold each
// other's requests) without an answer until POST /__release {target, match}: then each is answered as
// usual, unless its client gave up meanwhile (a call that timed out never happened, and is not recorded;
// the release answers once each held client is seen gone or has stayed for RELEASE_GRACE_MS).
import { createServer, type Server, type ServerResponse } from "node:http";
import { json, readBody } from "./http";
import { parseTelegramHtml, TelegramParseError, type TelegramEntity } from "./telegram-html";
import { workflowStandIns } from "./workflow-stand-ins";

interface BotCall {
  method: string;
  payload: Record<string, unknown>;
  at: number;
  /** performance.now() of this process at arrival (benchmarks running the stand-ins in-process). */
  hr: number;
  /** A text message as the person sees it: the text after Telegram parsed its parse_mode, and the entities. */
  view?: { text: string; entities: TelegramEntity[] };
}

interface InjectedFailure {
  method: string;
  chatId?: number;
  times: number;
  errorCode: number;
  retryAfter?: number;
  /** The Bot API's description (default: Telegram's for the code). */
  description?: string;
}

/** The chat model the stand-in lists at GET /v1/models. */
export const LOCAL_CHAT_MODEL = "stand-in-chat";

/** How long a released request's client may take to be seen gone before it counts as still waiting. */
const RELEASE_GRACE_MS = 500;

export interface StandIns {
  url: string;
  stop(): Promise<void>;
}

export async function startStandIns(): Promise<StandIns> {
  const calls: BotCall[] = [];
  const failures: InjectedFailure[] = [];
  const completionRequests: unknown[] = [];
  const googleRequests: Array<Record<string, string>> = [];
  const langfuseEvents: Array<{ type: string; body: Record<string, unknown>; authorization: string | undefined }> = [];
  /** Deletion requests of a deleted account, in arrival order. */
  const erasures: Array<{
    service: "google-revoke" | "gmail-stop" | "langfuse" | "posthog";
    path: string;
    authorization: string | null;
    body: string;
  }> = [];
  let messageId = 1000;
  const workflows = await workflowStandIns();
  /** setWebhook registrations per bot token (getWebhookInfo reads them back; the secret is never returned). */
  const webhooks = new Map<string, { url: string; allowed_updates: unknown; secret_token: unknown }>();
  /** Files a test put up for the bot to download (Telegram's servers hold a person's voice notes and photos). */
  const files = new Map<string, { bytes: Buffer; size: number }>();
  const transcriptions: Array<{ model: unknown; fileName: string; bytes: number }> = [];
  const pendingUpdates = new Map<string, number>();
  /** What the telemetry sinks received (PostHog /batch/, Axiom ingest, Sentry envelopes), raw. */
  const telemetry: Array<{
    sink: "posthog" | "axiom" | "sentry";
    path: string;
    authorization: string | null;
    query: string;
    body: string;
  }> = [];

  /** Hangs by target and body match, each with the releases of the requests waiting on it (each settles once decided). */
  const hung = new Map<string, { target: string; match: string; waiting: Array<() => Promise<void>> }>();
  /**
   * Resolves at once, or on release for a hung request; false when the client gave up meanwhile (the
   * call never happened). A client that gives up (an aborted fetch) closes its connection asynchronously:
   * workerd tears the socket down after the abort, so a test that releases right after its call failed
   * can reach the stand-in before that close does (seen: 1–2 ms after the release). So a release decides
   * only once the connection is seen closed, or after RELEASE_GRACE_MS with it still open (a client
   * still waiting, answered then), and POST /__release answers after every decision.
   */
  const holdIfHung = async (target: string, body: string, res: ServerResponse): Promise<boolean> => {
    const hang = [...hung.values()].find((h) => h.target === target && body.includes(h.match));
    if (!hang) return true;
    let closed = false;
    const gone = () => closed || (res.socket?.destroyed ?? true) || (res.socket?.readableEnded ?? true);
    const closing = new Promise<void>((resolve) =>
      res.once("close", () => {
        closed = true;
        resolve();
      }),
    );
    return new Promise<boolean>((decide) =>
      hang.waiting.push(async () => {
        if (!gone()) {
          let timer: ReturnType<typeof setTimeout> | undefined;
          await Promise.race([closing, new Promise((resolve) => (timer = setTimeout(resolve, RELEASE_GRACE_MS)))]);
          clearTimeout(timer);
          // A timer can fire before the poll phase reads a close that arrived meanwhile (a busy loop).
          await new Promise((resolve) => setImmediate(resolve));
        }
        decide(!gone());
      }),
    );
  };

  const server: Server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? "/", "http://stand-in");
      const body = req.method === "POST" || req.method === "DELETE" ? await readBody(req) : "";
      if (url.pathname === "/__hang" || url.pathname === "/__release") {
        const { target, match = "" } = JSON.parse(body) as { target: string; match?: string };
        const key = JSON.stringify([target, match]);
        if (url.pathname === "/__hang") hung.set(key, hung.get(key) ?? { target, match, waiting: [] });
        else {
          const waiting = hung.get(key)?.waiting ?? [];
          hung.delete(key);
          await Promise.all(waiting.map((release) => release()));
        }
        return json(res, 200, { ok: true });
      }
      if (url.pathname === "/__held") {
        const key = JSON.stringify([url.searchParams.get("target"), url.searchParams.get("match") ?? ""]);
        return json(res, 200, { held: hung.get(key)?.waiting.length ?? 0 });
      }
      if (url.pathname === "/__files") {
        const file = JSON.parse(body) as { fileId: string; base64: string; size?: number };
        const bytes = Buffer.from(file.base64, "base64");
        files.set(file.fileId, { bytes, size: file.size ?? bytes.length });
        return json(res, 200, { ok: true });
      }
      if (url.pathname === "/__transcriptions") return json(res, 200, transcriptions);
      const download = /^\/file\/bot[^/]+\/files\/(.+)$/.exec(url.pathname);
      if (download && req.method === "GET") {
        if (!(await holdIfHung("file", download[1]!, res))) return;
        const file = files.get(decodeURIComponent(download[1]!));
        if (!file) return json(res, 404, { ok: false, error_code: 404, description: "Not Found" });
        res.writeHead(200, { "content-type": "application/octet-stream", "content-length": file.bytes.length });
        return res.end(file.bytes);
      }
      if (url.pathname === "/v1/audio/transcriptions") {
        if (!(await holdIfHung("transcription", body, res))) return;
        const form = formPayload(body, req.headers["content-type"] ?? "");
        const audio = form.file as { filename: string; size: number; text: string } | undefined;
        if (!audio) return json(res, 400, { error: { message: "file is required" } });
        transcriptions.push({ model: form.model, fileName: audio.filename, bytes: audio.size });
        if (audio.text.startsWith("OUTAGE")) return json(res, 503, { error: { message: "the speech server is overloaded" } });
        return json(res, 200, { text: /^SPEECH:(.*)$/s.exec(audio.text)?.[1]?.trim() ?? "" });
      }
      if (url.pathname === "/__calls") {
        const chatId = url.searchParams.get("chat_id");
        const method = url.searchParams.get("method");
        return json(
          res,
          200,
          calls.filter((c) => (!chatId || String(c.payload.chat_id) === chatId) && (!method || c.method === method)),
        );
      }
      if (url.pathname === "/__fail") {
        failures.push(JSON.parse(body) as InjectedFailure);
        return json(res, 200, { ok: true });
      }
      if (url.pathname === "/__requests") return json(res, 200, completionRequests);
      // What `npm start` asks a model server on this machine (ops/local-model.ts): an embedding model
      // first, which is never the one chosen, then the chat model.
      if (url.pathname === "/v1/models")
        return json(res, 200, { object: "list", data: [{ id: "nomic-embed-text" }, { id: LOCAL_CHAT_MODEL }] });
      if (url.pathname === "/__webhooks") return json(res, 200, Object.fromEntries(webhooks));
      if (url.pathname === "/__telemetry")
        return json(
          res,
          200,
          telemetry.filter((t) => !url.searchParams.get("sink") || t.sink === url.searchParams.get("sink")),
        );
      const sink =
        url.pathname === "/batch/"
          ? "posthog"
          : /^\/v1\/datasets\/[^/]+\/ingest$/.test(url.pathname)
            ? "axiom"
            : /^\/api\/\d+\/envelope\/$/.test(url.pathname)
              ? "sentry"
              : null;
      if (sink && req.method === "POST") {
        telemetry.push({
          sink,
          path: url.pathname,
          authorization: req.headers.authorization ?? (req.headers["x-sentry-auth"] as string | undefined) ?? null,
          query: url.search,
          body,
        });
        return json(res, 200, sink === "sentry" ? { id: crypto.randomUUID().replace(/-/g, "") } : { status: 1 });
      }
      if (url.pathname === "/__pending") {
        const { token, count } = JSON.parse(body) as { token: string; count: number };
        pendingUpdates.set(token, count);
        return json(res, 200, { ok: true });
      }
      if (url.pathname === "/__langfuse") return json(res, 200, langfuseEvents);
      if (url.pathname === "/__google") return json(res, 200, googleRequests);
      if (url.pathname === "/__erasure") return json(res, 200, erasures);
      const erasure =
        req.method === "POST" && url.pathname === "/google/revoke"
          ? "google-revoke"
          : req.method === "POST" && url.pathname === "/gmail/v1/users/me/stop"
            ? "gmail-stop"
            : req.method === "DELETE" && url.pathname === "/api/public/traces"
              ? "langfuse"
              : req.method === "POST" && /^\/api\/projects\/\w+\/persons\/bulk_delete\/$/.test(url.pathname)
                ? "posthog"
                : null;
      if (erasure) {
        if (!(await holdIfHung(erasure, body, res))) return;
        erasures.push({ service: erasure, path: url.pathname, authorization: req.headers.authorization ?? null, body });
        if (erasure === "google-revoke")
          return new URLSearchParams(body).get("token")?.includes("unknown")
            ? json(res, 400, { error: "invalid_token" })
            : json(res, 200, {});
        if (erasure === "gmail-stop") return void res.writeHead(204).end();
        if (erasure === "langfuse") {
          const { traceIds } = JSON.parse(body) as { traceIds: string[] };
          const ofTrace = (event: { type: string; body: Record<string, unknown> }) =>
            traceIds.includes(String(event.type === "trace-create" ? event.body.id : event.body.traceId));
          for (let i = langfuseEvents.length - 1; i >= 0; i--) if (ofTrace(langfuseEvents[i]!)) langfuseEvents.splice(i, 1);
          return json(res, 200, { message: "Traces deleted" });
        }
        const { distinct_ids: ids } = JSON.parse(body) as { distinct_ids: string[] };
        return json(res, 200, {
          persons_found: ids.length,
          persons_deleted: ids.length,
          events_queued_for_deletion: true,
          recordings_queued_for_deletion: false,
        });
      }
      if (url.pathname === "/google/token") {
        const form = Object.fromEntries(new URLSearchParams(body));
        googleRequests.push(form);
        if (form.grant_type === "refresh_token") {
          const owner = /^1\/\/refresh-(.+)$/.exec(form.refresh_token ?? "")?.[1];
          if (!owner || owner.includes("revoked")) return json(res, 400, { error: "invalid_grant" });
          return json(res, 200, { access_token: `ya29.refreshed-${owner}`, expires_in: 3599, token_type: "Bearer" });
        }
        const sub = /^good-(.+)$/.exec(form.code ?? "")?.[1];
        if (!sub || !form.code_verifier) return json(res, 400, { error: "invalid_grant" });
        const claims = {
          iss: "https://accounts.google.com",
          sub,
          email: `${sub}@gmail.example`,
          name: `Person ${sub}`,
          aud: form.client_id,
          iat: 0,
          exp: 9_999_999_999,
        };
        const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
        return json(res, 200, {
          access_token: `ya29.access-${sub}`,
          refresh_token: `1//refresh-${sub}`,
          expires_in: 3599,
          scope: "openid email profile https://www.googleapis.com/auth/gmail.readonly",
          token_type: "Bearer",
          id_token: `${part({ alg: "RS256", typ: "JWT" })}.${part(claims)}.signature`,
        });
      }
      if (url.pathname === "/api/public/traces" && req.method === "GET") {
        // Langfuse's public API: traces (trace-create events are upserts, merged here), filtered.
        const byId = new Map<string, Record<string, unknown>>();
        for (const event of langfuseEvents.filter((e) => e.type === "trace-create")) {
          const id = String(event.body.id);
          const defined = Object.fromEntries(Object.entries(event.body).filter(([, v]) => v !== undefined));
          byId.set(id, { ...byId.get(id), ...defined });
        }
        const userId = url.searchParams.get("userId");
        const tags = url.searchParams.getAll("tags");
        const data = [...byId.values()].filter(
          (t) => (!userId || t.userId === userId) && tags.every((tag) => Array.isArray(t.tags) && t.tags.includes(tag)),
        );
        return json(res, 200, { data, meta: { page: 1, limit: data.length, totalItems: data.length, totalPages: 1 } });
      }
      if (url.pathname === "/api/public/ingestion") {
        const { batch } = JSON.parse(body) as { batch: Array<{ id: string; type: string; body: Record<string, unknown> }> };
        for (const event of batch) langfuseEvents.push({ type: event.type, body: event.body, authorization: req.headers.authorization });
        return json(res, 207, { successes: batch.map((e) => ({ id: e.id, status: 201 })), errors: [] });
      }

      if (await workflows(url, req, body, res)) return;

      const bot = /^\/bot([^/]+)\/(\w+)$/.exec(url.pathname);
      if (bot) {
        if (!(await holdIfHung(bot[2]!, body, res))) return;
        const type = req.headers["content-type"] ?? "";
        const payload = type.startsWith("multipart/form-data")
          ? formPayload(body, type)
          : body
            ? (JSON.parse(body) as Record<string, unknown>)
            : {};
        return botApi(bot[1]!, bot[2]!, payload, res);
      }
      if (url.pathname === "/v1/chat/completions") {
        if (!(await holdIfHung("chat", body, res))) return;
        const request = JSON.parse(body) as ChatRequest;
        completionRequests.push(request);
        return chatCompletion(request, res);
      }
      if (url.pathname === "/v1/embeddings") {
        if (!(await holdIfHung("embeddings", body, res))) return;
        const { input } = JSON.parse(body) as { input: string[] };
        return json(res, 200, { data: input.map((text, index) => ({ index, embedding: pseudoEmbedding(text) })) });
      }
      json(res, 404, { error: "no such stand-in route" });
    } catch (error) {
      json(res, 500, { error: String(error) });
    }
  });

  function botApi(token: string, method: string, payload: Record<string, unknown>, res: ServerResponse) {
    const failure = failures.find((f) => f.method === method && f.times > 0 && (f.chatId === undefined || f.chatId === payload.chat_id));
    if (failure) {
      failure.times--;
      calls.push({ method: `${method}:failed`, payload, at: Date.now(), hr: performance.now() });
      return json(res, failure.errorCode, {
        ok: false,
        error_code: failure.errorCode,
        description: failure.description ?? (failure.errorCode === 429 ? "Too Many Requests: retry later" : "Internal Server Error"),
        ...(failure.retryAfter !== undefined ? { parameters: { retry_after: failure.retryAfter } } : {}),
      });
    }
    const webApps = (
      (payload.reply_markup as { inline_keyboard?: Array<Array<{ web_app?: { url?: string } }>> } | undefined)?.inline_keyboard ?? []
    )
      .flat()
      .filter((button) => button.web_app);
    const plainWebApp = webApps.find((button) => !button.web_app?.url?.startsWith("https://"));
    if (plainWebApp) {
      calls.push({ method: `${method}:refused`, payload, at: Date.now(), hr: performance.now() });
      return json(res, 400, {
        ok: false,
        error_code: 400,
        description: `Bad Request: inline keyboard button Web App URL '${plainWebApp.web_app?.url}' is invalid: Only HTTPS links are allowed`,
      });
    }
    let view: BotCall["view"];
    if (TEXT_METHODS.has(method)) {
      try {
        view = textView(method, payload);
      } catch (error) {
        if (!(error instanceof TelegramParseError)) throw error;
        calls.push({ method: `${method}:refused`, payload, at: Date.now(), hr: performance.now() });
        return json(res, 400, { ok: false, error_code: 400, description: error.message });
      }
    }
    calls.push({ method, payload, at: Date.now(), hr: performance.now(), ...(view ? { view } : {}) });
    if (method === "sendMessage") {
      return json(res, 200, {
        ok: true,
        result: {
          message_id: ++messageId,
          date: Math.floor(Date.now() / 1000),
          chat: { id: payload.chat_id, type: "private" },
          text: view?.text,
          ...(view?.entities.length ? { entities: view.entities } : {}),
        },
      });
    }
    if (method === "sendDocument") {
      const document = payload.document as { filename?: string; size?: number } | undefined;
      return json(res, 200, {
        ok: true,
        result: {
          message_id: ++messageId,
          date: Math.floor(Date.now() / 1000),
          chat: { id: payload.chat_id, type: "private" },
          caption: payload.caption,
          document: { file_id: `file-${messageId}`, file_name: document?.filename, file_size: document?.size },
        },
      });
    }
    if (method === "getFile") {
      const id = String(payload.file_id ?? "");
      const file = files.get(id);
      if (!file)
        return json(res, 400, {
          ok: false,
          error_code: 400,
          description: "Bad Request: wrong file_id or the file is temporarily unavailable",
        });
      if (file.size > 20 * 1024 * 1024) return json(res, 400, { ok: false, error_code: 400, description: "Bad Request: file is too big" });
      return json(res, 200, {
        ok: true,
        result: { file_id: id, file_unique_id: `u-${id}`, file_size: file.size, file_path: `files/${id}` },
      });
    }
    if (method === "setMyCommands") {
      // Telegram's rules: 1–100 commands, each 1–32 of a-z, 0-9 and _, a description of 1–256 characters.
      const commands = payload.commands as Array<{ command?: string; description?: string }> | undefined;
      const valid =
        Array.isArray(commands) &&
        commands.length >= 1 &&
        commands.length <= 100 &&
        commands.every(
          (c) => /^[a-z0-9_]{1,32}$/.test(c.command ?? "") && (c.description?.length ?? 0) >= 1 && (c.description?.length ?? 0) <= 256,
        );
      if (!valid) return json(res, 400, { ok: false, error_code: 400, description: "Bad Request: BOT_COMMAND_INVALID" });
      return json(res, 200, { ok: true, result: true });
    }
    if (method === "setChatMenuButton") {
      // Telegram's rule: a Web App's address is https.
      const button = payload.menu_button as { type?: string; text?: string; web_app?: { url?: string } } | undefined;
      if (button?.type === "web_app" && (!button.text || !button.web_app?.url?.startsWith("https://")))
        return json(res, 400, { ok: false, error_code: 400, description: "Bad Request: BUTTON_URL_INVALID" });
      return json(res, 200, { ok: true, result: true });
    }
    if (method === "setWebhook") {
      if (typeof payload.url !== "string" || (!payload.url.startsWith("https://") && !payload.url.startsWith("http://127.0.0.1"))) {
        return json(res, 400, {
          ok: false,
          error_code: 400,
          description: "Bad Request: bad webhook: An HTTPS URL must be provided for webhook",
        });
      }
      webhooks.set(token, { url: payload.url, allowed_updates: payload.allowed_updates, secret_token: payload.secret_token });
      return json(res, 200, { ok: true, result: true, description: "Webhook was set" });
    }
    if (method === "getWebhookInfo") {
      const hook = webhooks.get(token);
      return json(res, 200, {
        ok: true,
        result: {
          url: hook?.url ?? "",
          has_custom_certificate: false,
          pending_update_count: pendingUpdates.get(token) ?? 0,
          max_connections: 40,
          ...(hook?.allowed_updates ? { allowed_updates: hook.allowed_updates } : {}),
        },
      });
    }
    if (method === "getMe") {
      // A token containing "joins-groups" plays a bot BotFather still lets join groups.
      return json(res, 200, {
        ok: true,
        result: { id: 42, is_bot: true, first_name: "Soma", username: "soma_test_bot", can_join_groups: token.includes("joins-groups") },
      });
    }
    return json(res, 200, { ok: true, result: true });
  }

  // Idle connections stay open longer than a client keeps them (undici: 4 s), as real APIs' do: with
  // Node's default 5 s, a fetch could pick a kept-alive socket the stand-in was closing that instant
  // ("other side closed", tests/node/ops.test.ts, once under load).
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Bot API methods whose `text` Telegram parses (and refuses) as the person will see it. */
const TEXT_METHODS = new Set(["sendMessage", "sendMessageDraft", "editMessageText"]);

/** The text a person sees: HTML parsed as Telegram does; plain text as it is, within the same limits. */
function textView(method: string, payload: Record<string, unknown>): { text: string; entities: TelegramEntity[] } {
  const text = typeof payload.text === "string" ? payload.text : "";
  if (payload.parse_mode === "HTML") return parseTelegramHtml(text);
  if (payload.parse_mode !== undefined)
    throw new TelegramParseError(`Bad Request: unsupported parse_mode in this stand-in: ${String(payload.parse_mode)}`);
  // A draft may be empty (Telegram shows "Thinking…"); a message may not.
  if (text.trim() === "" && method !== "sendMessageDraft") throw new TelegramParseError("Bad Request: message text is empty");
  if (text.length > 4096) throw new TelegramParseError("Bad Request: message is too long");
  return { text, entities: [] };
}

/** A multipart Bot API call's fields: numbers as numbers (chat_id), each file as {filename, size, text}. */
function formPayload(body: string, type: string): Record<string, unknown> {
  const boundary = /boundary=("?)([^";]+)\1/.exec(type)?.[2] ?? "";
  const payload: Record<string, unknown> = {};
  const files = new Map<string, unknown>();
  // Parsed by hand: grammY writes headers as `content-disposition:form-data;name="x";filename=y`,
  // which Node's FormData parser refuses (Telegram accepts it).
  for (const part of body.split(`--${boundary}`).slice(1, -1)) {
    const [head = "", ...rest] = part.replace(/^\r\n/, "").split("\r\n\r\n");
    const content = rest.join("\r\n\r\n").replace(/\r\n$/, "");
    const name = /(?:^|;)\s*name="?([^";\r\n]+)/i.exec(head)?.[1];
    const filename = /filename="?([^";\r\n]+)/i.exec(head)?.[1];
    if (!name) continue;
    if (filename !== undefined) files.set(name, { filename, size: Buffer.byteLength(content), text: content });
    else payload[name] = /^-?\d+$/.test(content) ? Number(content) : content;
  }
  // grammY names a file's part at random and points at it from its field: document = "attach://<part>".
  for (const [name, value] of Object.entries(payload)) {
    const part = typeof value === "string" ? /^attach:\/\/(.+)$/.exec(value)?.[1] : undefined;
    if (part && files.has(part)) {
      payload[name] = files.get(part);
      files.delete(part);
    }
  }
  // A file part nothing points at is a field of its own (an OpenAI-style upload: file=<the audio>).
  for (const [name, file] of files) payload[name] ??= file;
  return payload;
}

interface ChatRequest {
  stream?: boolean;
  response_format?: { type: string };
  messages: Array<{ role: string; content?: string | null | ContentPart[]; tool_calls?: unknown[] }>;
}

type ContentPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };

/**
 * A user message's words and what its images show. The scripted model "sees" an image whose bytes
 * read "PHOTO: <what is in it>" (a test's picture), and anything else as "a picture".
 */
function contentOf(content: string | null | undefined | ContentPart[]): { text: string; images: string[] } {
  if (!Array.isArray(content)) return { text: String(content ?? ""), images: [] };
  const text = content.map((part) => (part.type === "text" ? part.text : "")).join("");
  const images = content.flatMap((part) => {
    if (part.type !== "image_url") return [];
    const data = /^data:[^;]+;base64,(.*)$/.exec(part.image_url.url)?.[1];
    const seen = data ? /^PHOTO: (.+)$/s.exec(Buffer.from(data, "base64").toString("utf8"))?.[1] : undefined;
    return [seen?.trim() ?? "a picture"];
  });
  return { text, images };
}

/** A scripted model behind the chat-completions protocol: one tool call for known sentences, then text. */
function chatCompletion(request: ChatRequest, res: ServerResponse) {
  const last = request.messages.at(-1);
  const lastUser = [...request.messages].reverse().find((m) => m.role === "user");
  // A provider that refuses one input every time, as a content filter does: a permanent failure.
  if (contentOf(lastUser?.content).text.includes("POISON")) {
    return json(res, 400, { error: { message: "the provider refuses this input", type: "invalid_request_error", code: "content_filter" } });
  }
  let reply: { content?: string; toolCall?: { name: string; arguments: string } };
  // Structured output (fact extraction, agents/fact-extraction.ts): a well-formed answer with no facts.
  if (request.response_format?.type === "json_object" || request.response_format?.type === "json_schema") {
    return json(res, 200, {
      id: `chatcmpl-${Date.now()}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: "stand-in",
      choices: [{ index: 0, message: { role: "assistant", content: JSON.stringify({ facts: [] }) }, finish_reason: "stop" }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    });
  }
  const toolResults = request.messages.slice(request.messages.lastIndexOf(lastUser!)).filter((m) => m.role === "tool").length;
  if (/^bench: /.test(String(lastUser?.content ?? "")) && toolResults < 2) {
    // The benchmarks' turn: one capture, then one recall, then the answer.
    const title = String(lastUser?.content).replace(/^bench: /, "");
    reply =
      toolResults === 0
        ? { toolCall: { name: "memory_capture", arguments: JSON.stringify({ type: "book", name: title }) } }
        : { toolCall: { name: "memory_recall", arguments: JSON.stringify({ query: "books", type: "book", limit: 5 }) } };
  } else if (last?.role === "tool") {
    reply = { content: `Done. Tool said: ${String(last.content).slice(0, 300)}` };
  } else {
    const { text, images } = contentOf(lastUser?.content);
    // A test's own reply text, streamed word by word like any answer (the web chat's Markdown).
    const scripted = /^Reply with:\n([\s\S]+)$/.exec(text)?.[1];
    const read = /I (?:just )?(?:finished reading|read) (.+?)[.!]?$/i.exec(text);
    if (images.length > 0) reply = { content: `In your photo I see ${images.join(" and ")}. ${text}`.trim() };
    else if (scripted) reply = { content: scripted };
    else if (read) reply = { toolCall: { name: "memory_capture", arguments: JSON.stringify({ type: "book", name: read[1] }) } };
    else if (/which books/i.test(text))
      reply = { toolCall: { name: "memory_recall", arguments: JSON.stringify({ query: "books", type: "book" }) } };
    else reply = { content: "Hello from the stand-in model." };
  }
  const id = `chatcmpl-${Date.now()}`;
  const callId = `call_${toolResults + 1}`;
  const finish = reply.toolCall ? "tool_calls" : "stop";
  const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
  if (!request.stream) {
    return json(res, 200, {
      id,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: "stand-in",
      choices: [
        {
          index: 0,
          finish_reason: finish,
          message: reply.toolCall
            ? { role: "assistant", content: null, tool_calls: [{ id: callId, type: "function", function: reply.toolCall }] }
            : { role: "assistant", content: reply.content },
        },
      ],
      usage,
    });
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const chunk = (delta: unknown, finishReason: string | null, extra: object = {}) =>
    res.write(
      `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model: "stand-in", choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra })}\n\n`,
    );
  if (reply.toolCall) {
    chunk(
      {
        role: "assistant",
        tool_calls: [{ index: 0, id: callId, type: "function", function: { name: reply.toolCall.name, arguments: "" } }],
      },
      null,
    );
    chunk({ tool_calls: [{ index: 0, function: { arguments: reply.toolCall.arguments } }] }, null);
  } else {
    for (const word of (reply.content ?? "").split(/(?<= )/)) chunk({ content: word }, null);
  }
  chunk({}, finish, { usage });
  res.end("data: [DONE]\n\n");
}

function pseudoEmbedding(text: string): number[] {
  const vector = new Array<number>(1024).fill(0);
  for (let i = 0; i < text.length; i++) vector[(text.charCodeAt(i) * 31 + i) % 1024]! += 1;
  const norm = Math.hypot(...vector) || 1;
  return vector.map((v) => v / norm);
}
