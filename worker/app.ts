// The Hono application: cross-cutting middleware, then one sub-app per surface. Errors from anywhere
// become the JSON shape of worker/errors.ts; unknown paths are 404, known paths with the wrong method 405.
// Body-size limits belong to each surface (worker/body-limit.ts), placed after its authentication:
// POST /api/chat must answer 307 without a session whatever the body, even an oversized one.
import { Hono } from "hono";
import { requestId } from "hono/request-id";
import { workerdDatabase } from "../db/workerd-socket";
import { loadConfig } from "../platform/config";
import { createTelemetry } from "../platform/telemetry/sinks";
import { ApiError, errorResponse } from "./errors";
import { MINI_APP_FRAME_ANCESTORS, secureHeadersFor } from "./security-headers";
import { app as webApp } from "./pages/app";
import { login } from "./pages/login";
import { mcp } from "./mcp/server";
import { agent } from "./routes/agent";
import { auth } from "./routes/auth";
import { authorize } from "./routes/authorize";
import { chat } from "./routes/chat";
import { google } from "./routes/google";
import { health } from "./routes/health";
import { mail } from "./routes/mail";
import { MINI_APP_PATHS, miniApp } from "./routes/mini-app";
import { ops } from "./routes/ops";
import { telegram } from "./routes/telegram";
import { workflows } from "./routes/workflows";
import type { AppEnv } from "./types";
import { webApi } from "./web-api";

export function createApp() {
  const app = new Hono<AppEnv>();

  app.use(requestId({ headerName: "X-Request-Id", limitLength: 64 }));
  // The Mini App's pages are framed by Telegram's web client (and, in development, by a test's page on
  // loopback); every other response may be framed by no one.
  const pageHeaders = secureHeadersFor(["'none'"]);
  const miniAppHeaders = secureHeadersFor(MINI_APP_FRAME_ANCESTORS);
  const miniAppDevHeaders = secureHeadersFor([...MINI_APP_FRAME_ANCESTORS, "http://localhost:*", "http://127.0.0.1:*"]);
  app.use((c, next) => {
    if (!MINI_APP_PATHS.includes(c.req.path.replace(/\/$/, "") as (typeof MINI_APP_PATHS)[number])) return pageHeaders(c, next);
    return (c.env.ENVIRONMENT === "development" ? miniAppDevHeaders : miniAppHeaders)(c, next);
  });
  app.use(async (c, next) => {
    const started = Date.now();
    const config = loadConfig(c.env);
    const telemetry = createTelemetry(config);
    c.set("config", config);
    c.set("telemetry", telemetry);
    // postgres.js connects lazily: routes that never query never open a socket.
    c.set("db", workerdDatabase(c.env.HYPERDRIVE.connectionString));
    try {
      await next();
    } finally {
      // One line per request: the route pattern (never the path: /auth/link/:token holds a secret).
      telemetry.log({
        kind: "request",
        requestId: c.var.requestId,
        method: c.req.method,
        route: c.req.routePath,
        status: c.res.status,
        durationMs: Date.now() - started,
        ...(c.var.person ? { userId: c.var.person.id } : {}),
      });
      c.executionCtx.waitUntil(telemetry.flush());
    }
  });

  app.route("/api/health", health);
  app.route("/api/chat", chat);
  app.route("/api/agent", agent);
  app.route("/api/messenger/webhook", telegram);
  app.route("/api/workflows", workflows);
  app.route("/api/webhooks/mail", mail);
  // /api/memories, /api/facts, /api/reminders, /api/apps, /api/push, /api/export, /api/import, /api/me, /api/account.
  app.route("/", webApi);
  app.route("/api/ops", ops);
  // Reached only through the OAuth provider in front of the app (worker/mcp/oauth.ts), with a valid token.
  app.route("/mcp", mcp);
  app.route("/authorize", authorize);
  app.route("/login", login);
  app.route("/", webApp);
  app.route("/", auth);
  app.route("/", miniApp);
  app.route("/auth/google", google);

  const knownRoutes = app.routes
    .filter((route) => route.method !== "ALL")
    .map((route) => ({ method: route.method, pattern: pathPattern(route.path) }));

  app.notFound((c) => {
    const allowed = [...new Set(knownRoutes.filter((r) => r.pattern.test(c.req.path)).map((r) => r.method))];
    if (allowed.length > 0) {
      const message = `${c.req.method} is not allowed here. Use ${allowed.join(", ")}.`;
      return errorResponse(c, new ApiError("method_not_allowed", message, { Allow: allowed.join(", ") }));
    }
    return errorResponse(c, new ApiError("not_found", `Nothing at ${c.req.path}.`));
  });
  app.onError((error, c) => errorResponse(c, error));
  return app;
}

/** A Hono route path (`/api/memories/:id`, `/assets/*`) as an anchored regular expression. */
function pathPattern(path: string): RegExp {
  const body = path
    .replace(/\/$/, "")
    .split("/")
    .map((part) => (part.startsWith(":") ? "[^/]+" : part === "*" ? ".*" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${body}/?$`);
}
