// Embeddings for memory: Workers AI bge-m3 in production, any OpenAI-style /embeddings server, or a
// local deterministic embedder of the same width (hashed words and character trigrams) that needs no
// network. All produce unit vectors of EMBEDDING_DIMENSIONS, so recall works the same with each.
// A remote embedder answers within EMBEDDING_DEADLINE_MS or fails with DeadlineError("embeddings").
import { withDeadline } from "../../../platform/deadline";
import { EMBEDDING_DIMENSIONS } from "../../../db/schema";
import type { Config } from "../../../platform/config";

/** The longest one embed() call waits for Workers AI or an embeddings server (the body included). */
const EMBEDDING_DEADLINE_MS = 8_000;

export interface Embedder {
  readonly name: string;
  embed(texts: string[]): Promise<number[][]>;
}

/** The Workers AI binding, as far as embeddings use it (keeps this file free of workerd-only types). */
interface AiBinding {
  run(model: string, input: { text: string[] }): Promise<unknown>;
}

/** The embedder `config` asks for; `deadlineMs` bounds each call of a remote one. */
export function createEmbedder(config: Config, env: { AI?: AiBinding }, deadlineMs = EMBEDDING_DEADLINE_MS): Embedder {
  switch (config.EMBEDDING_PROVIDER) {
    case "local":
      return localEmbedder;
    case "openai-compatible":
      return openAiCompatibleEmbedder(config, deadlineMs);
    case "workers-ai":
      return workersAiEmbedder(env.AI, config.EMBEDDING_MODEL ?? "@cf/baai/bge-m3", deadlineMs);
  }
}

/** The embedding of one text, or null when the embedder fails (what it was for is stored without one). */
export async function embedOne(embedder: Embedder, text: string): Promise<number[] | null> {
  const vectors = await embedder.embed([text]).catch(() => null);
  return vectors?.[0] ?? null;
}

export const localEmbedder: Embedder = {
  name: "local",
  embed: async (texts) => texts.map(embedLocally),
};

function workersAiEmbedder(ai: AiBinding | undefined, model: string, deadlineMs: number): Embedder {
  return {
    name: `workers-ai:${model}`,
    async embed(texts) {
      if (!ai) throw new Error("EMBEDDING_PROVIDER=workers-ai needs the AI binding");
      // The binding takes no signal: the call is raced, and left to finish unobserved after the deadline.
      const output = (await withDeadline(ai.run(model, { text: texts }), deadlineMs, "embeddings")) as { data?: number[][] };
      return checked(output.data, texts.length);
    },
  };
}

function openAiCompatibleEmbedder(config: Config, deadlineMs: number): Embedder {
  const baseUrl = config.AI_BASE_URL;
  return {
    name: `openai-compatible:${config.EMBEDDING_MODEL ?? "default"}`,
    async embed(texts) {
      if (!baseUrl) throw new Error("EMBEDDING_PROVIDER=openai-compatible needs AI_BASE_URL");
      // The signal aborts the request (and the reading of its body) at the deadline.
      const body = await withDeadline(
        async (signal) => {
          const response = await fetch(`${baseUrl.replace(/\/$/, "")}/embeddings`, {
            method: "POST",
            headers: {
              "content-type": "application/json",
              ...(config.AI_API_KEY ? { authorization: `Bearer ${config.AI_API_KEY}` } : {}),
            },
            body: JSON.stringify({ model: config.EMBEDDING_MODEL, input: texts }),
            signal,
          });
          if (!response.ok) throw new Error(`embeddings server answered ${response.status}`);
          return (await response.json()) as { data?: Array<{ embedding: number[]; index?: number }> };
        },
        deadlineMs,
        "embeddings",
      );
      const sorted = [...(body.data ?? [])].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
      return checked(
        sorted.map((d) => d.embedding),
        texts.length,
      );
    },
  };
}

function checked(vectors: number[][] | undefined, expected: number): number[][] {
  if (!vectors || vectors.length !== expected) throw new Error(`expected ${expected} embeddings, got ${vectors?.length ?? 0}`);
  for (const vector of vectors) {
    if (vector.length !== EMBEDDING_DIMENSIONS) {
      throw new Error(`embedding has ${vector.length} dimensions; the schema stores ${EMBEDDING_DIMENSIONS}`);
    }
  }
  return vectors.map(unit);
}

/** Words (lightly stemmed) and their character trigrams, hashed into signed buckets, then normalized. */
function embedLocally(text: string): number[] {
  const vector = new Array<number>(EMBEDDING_DIMENSIONS).fill(0);
  const words = text
    .normalize("NFKC")
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
  for (const raw of words) {
    const word = raw.length > 3 && raw.endsWith("s") && !raw.endsWith("ss") ? raw.slice(0, -1) : raw;
    add(vector, `w:${word}`, 1);
    const padded = `  ${word} `;
    for (let i = 0; i + 3 <= padded.length; i++) add(vector, `t:${padded.slice(i, i + 3)}`, 0.35);
  }
  return unit(vector);
}

function add(vector: number[], feature: string, weight: number): void {
  const hash = fnv1a(feature);
  const index = hash % EMBEDDING_DIMENSIONS;
  vector[index] = (vector[index] ?? 0) + ((hash >>> 16) & 1 ? weight : -weight);
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

function unit(vector: number[]): number[] {
  const norm = Math.hypot(...vector);
  return norm === 0 ? vector : vector.map((v) => v / norm);
}
