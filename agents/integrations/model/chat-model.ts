// The chat model behind every turn, chosen by AI_PROVIDER: Workers AI in production, any server that
// speaks the OpenAI chat-completions protocol (Ollama, vLLM, …), or the built-in offline model.
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { LanguageModel } from "ai";
import { createWorkersAI } from "workers-ai-provider";
import type { Config } from "../../../platform/config";
import { OfflineModel } from "./offline-model";

const DEFAULT_WORKERS_AI_MODEL = "@cf/meta/llama-3.3-70b-instruct-fp8-fast";

export function createChatModel(config: Config, env: { AI?: Ai }): LanguageModel {
  switch (config.AI_PROVIDER) {
    case "offline":
      return new OfflineModel();
    case "openai-compatible": {
      if (!config.AI_BASE_URL) throw new Error("AI_PROVIDER=openai-compatible needs AI_BASE_URL");
      const provider = createOpenAICompatible({
        name: "openai-compatible",
        baseURL: config.AI_BASE_URL,
        ...(config.AI_API_KEY ? { apiKey: config.AI_API_KEY } : {}),
        includeUsage: true,
      });
      return provider(config.AI_MODEL ?? "default");
    }
    case "workers-ai": {
      if (!env.AI) throw new Error("AI_PROVIDER=workers-ai needs the AI binding");
      return createWorkersAI({ binding: env.AI })(config.AI_MODEL ?? DEFAULT_WORKERS_AI_MODEL);
    }
  }
}
