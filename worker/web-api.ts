// The routes the web app calls, as one sub-app: worker/app.ts mounts it at "/", and its type is the
// contract web/src/api.ts types its hono/client with (`import type { AppType }`: the browser bundle
// takes no server code). A route the web calls belongs here, mounted at the path it answers.
import { Hono } from "hono";
import { account } from "./routes/account";
import { apps } from "./routes/apps";
import { exportImport } from "./routes/export";
import { facts } from "./routes/facts";
import { imports } from "./routes/imports";
import { memories } from "./routes/memories";
import { push } from "./routes/push";
import { reminders } from "./routes/reminders";
import { routines } from "./routes/routines";
import type { AppEnv } from "./types";

export const webApi = new Hono<AppEnv>()
  .route("/api/memories", memories)
  .route("/api/facts", facts)
  .route("/api/reminders", reminders)
  .route("/api/apps", apps)
  .route("/api/push", push)
  .route("/api/routines", routines)
  .route("/api/imports", imports)
  .route("/api", exportImport)
  .route("/api", account);

/** The web app's API: paths, methods, inputs and JSON answers, for `hc<AppType>`. */
export type AppType = typeof webApi;
