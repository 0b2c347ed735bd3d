// A real model already running on this machine, for `npm start` with no AI_PROVIDER set (issue 26): the
// OpenAI-compatible servers people run locally, each on its usual port — Ollama (11434), LM Studio (1234),
// llama.cpp's server (8080) — asked `GET /v1/models` at once, each within a short timeout. The first in
// that order that answers with a model list is used; one that does not answer, answers slowly or answers
// something else is passed over. Its first model that is not an embedding model is the one asked.

export interface LocalModel {
  /** Who serves it, as people know it. */
  server: string;
  baseUrl: string;
  model: string;
}

/** The servers looked for, in order of preference. */
export const LOCAL_MODEL_SERVERS: ReadonlyArray<{ server: string; port: number }> = [
  { server: "Ollama", port: 11434 },
  { server: "LM Studio", port: 1234 },
  { server: "llama.cpp's server", port: 8080 },
];

/** Names of embedding and reranking models (nomic-embed-text, bge-m3, e5-large, all-MiniLM…): never asked to chat. */
const EMBEDDING_MODEL = /embed|\bbge\b|bge-|\be5-|minilm|rerank/i;

/** How long one server may take to list its models. */
export const LOCAL_MODEL_TIMEOUT_MS = 700;

/** The first of `servers` on 127.0.0.1 that lists a chat model, or null. */
export async function findLocalModel(
  servers: ReadonlyArray<{ server: string; port: number }> = LOCAL_MODEL_SERVERS,
  timeoutMs = LOCAL_MODEL_TIMEOUT_MS,
): Promise<LocalModel | null> {
  const answers = await Promise.all(
    servers.map(async ({ server, port }) => {
      const baseUrl = `http://127.0.0.1:${port}/v1`;
      try {
        const response = await fetch(`${baseUrl}/models`, { signal: AbortSignal.timeout(timeoutMs) });
        if (!response.ok) return null;
        const body = (await response.json()) as { data?: Array<{ id?: unknown }> };
        const ids = (body.data ?? []).map((m) => m.id).filter((id): id is string => typeof id === "string" && id.length > 0);
        const model = ids.find((id) => !EMBEDDING_MODEL.test(id));
        return model ? { server, baseUrl, model } : null;
      } catch {
        return null; // nothing listening, too slow, or not a model server
      }
    }),
  );
  return answers.find((answer) => answer !== null) ?? null;
}
