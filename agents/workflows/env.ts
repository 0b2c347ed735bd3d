// Workflow dependencies from a Worker's bindings (the Node side builds its own: tests, ops scripts).
import type { Database } from "../../db/database";
import { loadConfig } from "../../platform/config";
import { createChatModel } from "../integrations/model/chat-model";
import { createEmbedder } from "../integrations/model/embeddings";
import { telegramSenderFor } from "../integrations/telegram-sender";
import { createTracer } from "../../platform/telemetry/tracer";
import type { WorkflowDeps } from "./deps";

export function workflowDepsFromEnv(env: Env, db: Database): WorkflowDeps {
  const config = loadConfig(env);
  return {
    config,
    db,
    embedder: createEmbedder(config, env),
    model: createChatModel(config, env),
    tracer: createTracer(config),
    telegram: telegramSenderFor(config),
    now: () => new Date(),
  };
}
