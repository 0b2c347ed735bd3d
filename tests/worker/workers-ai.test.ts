// Guards the production model path: workers-ai-provider over the Workers AI binding, answering in the
// wire shapes Workers AI really uses (tests/worker/workers-ai-stand-in.ts), through the real AI SDK tool
// loop and the real memory tools on the test Postgres, and a whole agent turn with AI_PROVIDER=workers-ai.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { generateText, isStepCount, streamText } from "ai";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../platform/config";
import { createChatModel } from "../../agents/integrations/model/chat-model";
import { createEmbedder } from "../../agents/integrations/model/embeddings";
import { memoryTools } from "../../agents/turn/tools/memory-tools";
import type { UserAgent } from "../../agents/user-agent";
import { botReplies, newChatId, newPerson, testDatabase } from "./helpers";
import { embeddingOf, USAGE, workersAiStandIn, type Answer, type RunInputs, type WireShape } from "./workers-ai-stand-in";

const DEFAULT_MODEL = "@cf/meta/llama-3.3-70b-instruct-fp8-fast";
const QWEN = "@cf/qwen/qwen3-30b-a3b-fp8";

const workersAiConfig = (model?: string) => ({
  ...loadConfig(env),
  AI_PROVIDER: "workers-ai" as const,
  EMBEDDING_PROVIDER: "workers-ai" as const,
  AI_MODEL: model,
});

const hyperion = { type: "book", name: "Hyperion", properties: { author: "Dan Simmons" } };

/** The model's two steps: capture the book, then answer quoting the tool result it was sent back. */
const captureThenAnswer = (): Array<Answer | ((inputs: RunInputs) => Answer)> => [
  { toolCalls: [{ name: "memory_capture", arguments: hyperion }] },
  (inputs) => ({ text: `Saved. The tool said: ${inputs.messages?.find((m) => m.role === "tool")?.content ?? "nothing"}` }),
];

function unit(vector: number[]): number[] {
  const norm = Math.hypot(...vector);
  return vector.map((v) => v / norm);
}

async function storedEntity(userId: string) {
  const rows = (await testDatabase().withUser(userId, (tx) =>
    tx.execute(sql`select type, name, properties, embedding::text as embedding from entities`),
  )) as unknown as Array<{ type: string; name: string; properties: Record<string, unknown>; embedding: string }>;
  return rows.map((row) => ({ ...row, embedding: JSON.parse(row.embedding) as number[] }));
}

const paths: Array<{ label: string; shape: WireShape; model?: string; stream: boolean }> = [
  { label: "llama-3.3 native SSE, whole tool call", shape: "native", stream: true },
  { label: "llama-3.3 native JSON, not streamed", shape: "native", stream: false },
  { label: "llama-3.3 native SSE, call fragments", shape: "native-fragments", stream: true },
  { label: "qwen3 chat.completion.chunk SSE", shape: "chat-completions", model: QWEN, stream: true },
  { label: "qwen3 chat.completion, not streamed", shape: "chat-completions", model: QWEN, stream: false },
];

describe("the production model path: workers-ai-provider with a Workers AI stand-in", () => {
  it.each(paths)("$label: the tool loop captures the book and answers with the tool's result", async ({ shape, model, stream }) => {
    const person = await newPerson("workers-ai");
    const ai = workersAiStandIn({ shape, script: captureThenAnswer() });
    const config = workersAiConfig(model);
    const options = {
      model: createChatModel(config, { AI: ai.binding }),
      system: "You are Soma.",
      prompt: "I just finished reading Hyperion by Dan Simmons",
      tools: memoryTools({
        db: testDatabase(),
        userId: person.id,
        embedder: createEmbedder(config, { AI: ai.binding }),
        source: { kind: "test", externalId: `wai-${crypto.randomUUID()}` },
      }),
      stopWhen: isStepCount(3),
    };
    const { text, steps, usage } = stream
      ? await (async (result) => ({ text: await result.text, steps: await result.steps, usage: await result.totalUsage }))(
          streamText(options),
        )
      : await generateText(options).then((result) => ({ text: result.text, steps: result.steps, usage: result.totalUsage }));

    // The loop: one tool call parsed from Workers AI's shape, its result sent back, the final text.
    expect(steps).toHaveLength(2);
    expect(steps[0]?.toolCalls.map((c) => ({ toolName: c.toolName, input: c.input }))).toEqual([
      { toolName: "memory_capture", input: hyperion },
    ]);
    const toolOutput = steps[0]?.toolResults[0]?.output;
    expect(toolOutput).toMatchObject({ entityId: expect.any(String), created: true });
    expect(text).toBe(`Saved. The tool said: ${JSON.stringify(toolOutput)}`);
    expect(usage).toMatchObject({ inputTokens: 2 * USAGE.prompt_tokens, outputTokens: 2 * USAGE.completion_tokens });

    // The row, with the embedding Workers AI's bge-m3 gave for it (normalised).
    const [entity] = await storedEntity(person.id);
    expect(entity).toMatchObject({ type: "book", name: "Hyperion", properties: { author: "Dan Simmons" } });
    const expected = unit(embeddingOf("book: Hyperion", 1024));
    expect(Math.max(...entity!.embedding.map((v, i) => Math.abs(v - expected[i]!)))).toBeLessThan(1e-5);
    expect(ai.calls.filter((c) => c.model === "@cf/baai/bge-m3").map((c) => c.inputs)).toEqual([{ text: ["book: Hyperion"] }]);

    // What the provider sent: the model, stream or not, and the tools as Workers AI takes them.
    const [first, second] = ai.chatCalls();
    expect(ai.chatCalls()).toHaveLength(2);
    for (const call of [first!, second!]) {
      expect(call.model).toBe(model ?? DEFAULT_MODEL);
      expect(call.inputs.stream).toBe(stream ? true : undefined);
      expect(call.inputs.tools?.map((t) => t.function.name).sort()).toEqual(Object.keys(options.tools).sort());
      for (const tool of call.inputs.tools ?? []) {
        expect(tool.type).toBe("function");
        expect(tool.function.description).toEqual(expect.stringMatching(/\w/));
        expect(tool.function.parameters?.type).toBe("object");
      }
    }
    const capture = first!.inputs.tools?.find((t) => t.function.name === "memory_capture");
    expect(Object.keys(capture?.function.parameters?.properties ?? {})).toEqual(["type", "name", "properties", "happenedAt"]);
    expect(capture?.function.parameters?.required).toEqual(["type", "name"]);
    expect(capture?.function.description).toMatch(/^Save something the person told you/);
    expect(first!.inputs.messages).toEqual([
      { role: "system", content: "You are Soma." },
      { role: "user", content: "I just finished reading Hyperion by Dan Simmons" },
    ]);

    // The second step carries the assistant's tool call and the tool's result under the same id: the
    // id Workers AI gave when it gave one (the provider's internal suffix stripped), else the provider's.
    const [system, user, assistant, toolMessage, ...rest] = second!.inputs.messages ?? [];
    expect([system, user]).toEqual(first!.inputs.messages);
    expect(rest).toEqual([]);
    const callId = assistant?.tool_calls?.[0]?.id;
    expect(assistant).toEqual({
      role: "assistant",
      content: "",
      tool_calls: [{ id: callId, type: "function", function: { name: "memory_capture", arguments: expect.any(String) } }],
    });
    expect(JSON.parse(assistant!.tool_calls![0]!.function.arguments)).toEqual(hyperion);
    if (shape !== "native") expect(callId).toBe("chatcmpl-tool-chatcmpl-1-0");
    else expect(callId).toMatch(/\S/);
    expect(toolMessage).toEqual({ role: "tool", name: "memory_capture", tool_call_id: callId, content: JSON.stringify(toolOutput) });
  });

  it("streams a plain answer in Workers AI's native SSE shape, cut across network reads", async () => {
    const ai = workersAiStandIn({ shape: "native", script: [{ text: "Hello from Workers AI, in several tokens." }] });
    const result = streamText({ model: createChatModel(workersAiConfig(), { AI: ai.binding }), prompt: "hello" });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    expect(deltas.join("")).toBe("Hello from Workers AI, in several tokens.");
    expect(deltas.length).toBeGreaterThan(1);
    expect(await result.finishReason).toBe("stop");
    expect(ai.calls[0]?.inputs).toMatchObject({ messages: [{ role: "user", content: "hello" }], stream: true });
  });

  it("embeds through Workers AI bge-m3: { shape, data } becomes unit vectors, in order", async () => {
    const ai = workersAiStandIn({ shape: "native" });
    const vectors = await createEmbedder(workersAiConfig(), { AI: ai.binding }).embed(["Dune", "Hyperion"]);
    expect(ai.calls.map((c) => ({ model: c.model, inputs: c.inputs }))).toEqual([
      { model: "@cf/baai/bge-m3", inputs: { text: ["Dune", "Hyperion"] } },
    ]);
    expect(vectors).toHaveLength(2);
    for (const [i, text] of ["Dune", "Hyperion"].entries()) {
      expect(Math.hypot(...vectors[i]!)).toBeCloseTo(1, 6);
      expect(vectors[i]![0]).toBeCloseTo(unit(embeddingOf(text, 1024))[0]!, 9);
    }
  });

  it("refuses Workers AI embeddings of another width than the schema stores", async () => {
    const ai = workersAiStandIn({ shape: "native", embeddingDimensions: 768 });
    await expect(createEmbedder(workersAiConfig(), { AI: ai.binding }).embed(["Dune"])).rejects.toThrow(
      /768 dimensions; the schema stores 1024/,
    );
  });

  it("a whole agent turn with AI_PROVIDER=workers-ai: Telegram message in, memory written, reply sent", async () => {
    const person = await newPerson("workers-ai-agent");
    const agent = await getAgentByName(env.UserAgent, person.id);
    const chatId = newChatId();
    const ai = workersAiStandIn({
      shape: "native",
      script: [{ toolCalls: [{ name: "memory_capture", arguments: hyperion }] }, { text: "Noted: Hyperion, by Dan Simmons." }],
    });
    await runInDurableObject(agent, (instance: UserAgent) => {
      instance.modelOverride = createChatModel({ ...loadConfig(env), AI_PROVIDER: "workers-ai" }, { AI: ai.binding });
    });
    const updateId = Math.floor(Math.random() * 1e9);
    expect(
      await agent.enqueueTelegramMessage({
        updateId,
        chatId,
        messageId: updateId % 100000,
        text: "I just finished reading Hyperion by Dan Simmons",
      }),
    ).toEqual({ status: "queued" });
    await agent.settle();

    expect(await botReplies(chatId)).toEqual(["Noted: Hyperion, by Dan Simmons."]);
    expect((await storedEntity(person.id)).map(({ type, name, properties }) => ({ type, name, properties }))).toEqual([hyperion]);
    const [first, second] = ai.chatCalls();
    expect(first?.model).toBe(DEFAULT_MODEL);
    expect(first?.inputs.stream).toBe(true);
    expect(first?.inputs.messages?.[0]?.role).toBe("system");
    expect(first?.inputs.messages?.at(-1)).toEqual({ role: "user", content: "I just finished reading Hyperion by Dan Simmons" });
    expect(second?.inputs.messages?.at(-1)).toMatchObject({
      role: "tool",
      name: "memory_capture",
      content: expect.stringContaining('"created":true'),
    });
  });
});
