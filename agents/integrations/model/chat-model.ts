// The chat model behind every turn, chosen by AI_PROVIDER: Workers AI in production, any server that
// speaks the OpenAI chat-completions protocol (Ollama, vLLM, …), or the built-in offline model.
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { LanguageModel } from "ai";
import { createWorkersAI } from "workers-ai-provider";
import type { Config } from "../../../platform/config";
import { OfflineModel } from "./offline-model";

const DEFAULT_WORKERS_AI_MODEL = "@cf/meta/llama-3.3-70b-instruct-fp8-fast";

/** Model families that take images (Workers AI's vision models, and common ones behind OpenAI-style servers). */
const VISION_MODELS = /vision|llava|pixtral|-vl\b|vl-|gemma-3|llama-4|mistral-small-3\.[12]|gpt-4o|gpt-4\.1|gpt-5|claude|gemini/i;

/**
 * Whether the chat model is sent photos as images (AI_VISION): "auto" knows the vision models by name;
 * "on" and "off" decide for a model it does not know. The offline model never sees images.
 */
export function modelSeesImages(config: Config): boolean {
  if (config.AI_PROVIDER === "offline") return false;
  if (config.AI_VISION !== "auto") return config.AI_VISION === "on";
  const model = config.AI_MODEL ?? (config.AI_PROVIDER === "workers-ai" ? DEFAULT_WORKERS_AI_MODEL : "");
  return VISION_MODELS.test(model);
}

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
