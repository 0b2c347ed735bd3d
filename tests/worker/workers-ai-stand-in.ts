// A stand-in for the Workers AI binding (`env.AI`): a plain object whose run() answers the way Workers
// AI answers, and records every call. Wire shapes, and where they come from:
//   native            @cf/meta/llama-3.3-70b-instruct-fp8-fast (Soma's default). Not streamed:
//                     `{ response, tool_calls: [{ name, arguments: {…} }], usage }` — the model's output
//                     schema in workers-types (worker-configuration.d.ts) and Cloudflare's "traditional
//                     function calling" docs. Streamed: SSE events carrying the same fields,
//                     `data: {"response":"…","p":"…"}`, the tool call whole in one event, usage in the
//                     last one, then `data: [DONE]`.
//   native-fragments  the same model streaming a tool call in fragments inside the native envelope:
//                     `tool_calls: [{ id, type, index, function: { name } }]`, then argument pieces, then a
//                     null finalisation entry (as workers-ai-provider's streaming.ts describes Workers AI's
//                     stream). Only the streamed form differs from `native`.
//   chat-completions  models served in OpenAI's chat-completions shape, e.g. @cf/qwen/qwen3-30b-a3b-fp8:
//                     `choices[0].message.tool_calls[{ id, type, function: { name, arguments: "…" } }]`
//                     (its output schema in workers-types); streamed as `chat.completion.chunk` events with
//                     `choices[0].delta.tool_calls` fragments, `finish_reason`, a usage event, `[DONE]`.
// Embedding models answer `{ shape: [n, dims], data: number[][], pooling }` (bge-m3's output schema).

export type WireShape = "native" | "native-fragments" | "chat-completions";

/** What the model "decides" for one call: text, or tool calls. */
export type Answer = { text: string } | { toolCalls: Array<{ name: string; arguments: Record<string, unknown> }> };

/** The messages Workers AI receives (OpenAI-style roles, tool results as role "tool"). */
interface WireMessage {
  role: string;
  content: string;
  name?: string;
  tool_call_id?: string;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
}

interface WireTool {
  type: string;
  function: {
    name: string;
    description?: string;
    parameters?: { type?: string; properties?: Record<string, unknown>; required?: string[] };
  };
}

export interface RunInputs {
  messages?: WireMessage[];
  tools?: WireTool[];
  stream?: boolean;
  text?: string[];
  [key: string]: unknown;
}

interface RunCall {
  model: string;
  inputs: RunInputs;
  options: Record<string, unknown> | undefined;
}

/** Token counts every answer reports (so a test can check the provider reads them). */
export const USAGE = { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 };

const EMBEDDING_MODELS = new Set(["@cf/baai/bge-m3", "@cf/baai/bge-large-en-v1.5"]);

/**
 * A Workers AI binding for tests. Chat calls take the next scripted answer (a function sees the call's
 * inputs, e.g. to quote a tool result) and answer in `shape`; embedding calls answer vectors of
 * `embeddingDimensions` derived from the text.
 */
export function workersAiStandIn(options: {
  shape: WireShape;
  script?: Array<Answer | ((inputs: RunInputs) => Answer)>;
  embeddingDimensions?: number;
}) {
  const calls: RunCall[] = [];
  const script = [...(options.script ?? [])];
  const dimensions = options.embeddingDimensions ?? 1024;
  let callNumber = 0;

  const run = async (model: string, inputs: RunInputs, runOptions?: Record<string, unknown>): Promise<unknown> => {
    const { signal: _signal, ...serialisable } = runOptions ?? {};
    calls.push({ model, inputs: structuredClone(inputs), options: serialisable });
    if (EMBEDDING_MODELS.has(model)) {
      const texts = inputs.text ?? [];
      return { shape: [texts.length, dimensions], data: texts.map((t) => embeddingOf(t, dimensions)), pooling: "cls" };
    }
    const next = script.shift();
    if (!next) throw new Error(`the Workers AI stand-in has no answer left for call ${calls.length}`);
    const answer = typeof next === "function" ? next(inputs) : next;
    const id = `chatcmpl-${++callNumber}`;
    return inputs.stream === true
      ? sseStream(streamedEvents(options.shape, answer, model, id))
      : wholeAnswer(options.shape, answer, model, id);
  };

  // The `Ai` class has many more members; the provider and embeddings.ts only ever call run().
  const binding = { run } as unknown as Ai;
  return { binding, calls, chatCalls: () => calls.filter((c) => !EMBEDDING_MODELS.has(c.model)) };
}

/** A deterministic, deliberately non-unit vector for `text` (the embedder must normalise it). */
export function embeddingOf(text: string, dimensions: number): number[] {
  let seed = 7;
  for (const ch of text) seed = (Math.imul(seed, 31) + ch.charCodeAt(0)) >>> 0;
  return Array.from({ length: dimensions }, (_, i) => ((Math.imul(seed ^ i, 2654435761) >>> 0) % 1000) / 100 - 5);
}

function wholeAnswer(shape: WireShape, answer: Answer, model: string, id: string): unknown {
  if (shape === "chat-completions") {
    const toolCalls =
      "toolCalls" in answer
        ? answer.toolCalls.map((call, i) => ({
            id: `chatcmpl-tool-${id}-${i}`,
            type: "function",
            function: { name: call.name, arguments: JSON.stringify(call.arguments) },
          }))
        : [];
    return {
      id,
      object: "chat.completion",
      created: 1_751_570_976,
      model,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: "text" in answer ? answer.text : null, reasoning_content: null, tool_calls: toolCalls },
          logprobs: null,
          finish_reason: toolCalls.length > 0 ? "tool_calls" : "stop",
          stop_reason: null,
        },
      ],
      usage: USAGE,
      prompt_logprobs: null,
    };
  }
  return "text" in answer
    ? { response: answer.text, tool_calls: [], usage: USAGE }
    : { response: "", tool_calls: answer.toolCalls, usage: USAGE };
}

function streamedEvents(shape: WireShape, answer: Answer, model: string, id: string): string[] {
  const words = "text" in answer ? (answer.text.match(/\S+\s*/g) ?? [answer.text]) : [];
  if (shape === "chat-completions") {
    const chunk = (delta: Record<string, unknown>, finish: string | null) =>
      JSON.stringify({
        id,
        object: "chat.completion.chunk",
        created: 1_751_570_976,
        model,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      });
    const events = [chunk({ role: "assistant", content: "" }, null)];
    for (const word of words) events.push(chunk({ content: word }, null));
    if ("toolCalls" in answer) {
      answer.toolCalls.forEach((call, index) => {
        events.push(
          chunk(
            { tool_calls: [{ id: `chatcmpl-tool-${id}-${index}`, type: "function", index, function: { name: call.name, arguments: "" } }] },
            null,
          ),
        );
        for (const piece of pieces(JSON.stringify(call.arguments)))
          events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }, null));
      });
    }
    events.push(chunk({}, "toolCalls" in answer ? "tool_calls" : "stop"));
    events.push(JSON.stringify({ id, object: "chat.completion.chunk", created: 1_751_570_976, model, choices: [], usage: USAGE }));
    return events;
  }
  // Native events carry a padding field `p`, as Workers AI's do.
  const native = (fields: Record<string, unknown>) => JSON.stringify({ response: "", ...fields, p: "abdefgh" });
  const events = words.map((word) => native({ response: word }));
  if ("toolCalls" in answer) {
    if (shape === "native") {
      events.push(native({ tool_calls: answer.toolCalls }));
    } else {
      answer.toolCalls.forEach((call, index) => {
        events.push(
          native({ tool_calls: [{ id: `chatcmpl-tool-${id}-${index}`, type: "function", index, function: { name: call.name } }] }),
        );
        for (const piece of pieces(JSON.stringify(call.arguments)))
          events.push(native({ tool_calls: [{ index, function: { arguments: piece } }] }));
        events.push(native({ tool_calls: [{ id: null, type: null, function: { name: null, arguments: null } }] }));
      });
    }
  }
  events.push(JSON.stringify({ response: "", usage: USAGE }));
  return events;
}

/** A JSON string cut in uneven pieces, the way argument deltas arrive. */
function pieces(json: string): string[] {
  const out: string[] = [];
  for (let i = 0, size = 5; i < json.length; i += size, size = size === 5 ? 11 : 5) out.push(json.slice(i, i + size));
  return out;
}

/** The bytes of an SSE body, delivered in 23-byte reads that cut across events (as the network does). */
function sseStream(events: string[]): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode([...events.map((e) => `data: ${e}\n\n`), "data: [DONE]\n\n"].join(""));
  let offset = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + 23));
      offset += 23;
    },
  });
}
