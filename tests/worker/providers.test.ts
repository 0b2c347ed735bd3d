// Guards the model and embedding providers that leave the Worker: the openai-compatible chat model
// (streaming and tool calls over the chat-completions protocol) and embeddings, against a local
// stand-in server, driving the real tool loop with the real memory tools.
import { isStepCount, streamText } from "ai";
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { createChatModel } from "../../agents/integrations/model/chat-model";
import { createEmbedder, localEmbedder } from "../../agents/integrations/model/embeddings";
import { turnTools } from "../../agents/turn/tools/index";
import { loadConfig } from "../../platform/config";
import { newPerson, testDatabase } from "./helpers";

const config = () => ({
  ...loadConfig(env),
  AI_PROVIDER: "openai-compatible" as const,
  EMBEDDING_PROVIDER: "openai-compatible" as const,
  AI_BASE_URL: `${env.STAND_IN_URL}/v1`,
  AI_MODEL: "stand-in",
  AI_API_KEY: "test-key",
});

describe("AI_PROVIDER=openai-compatible", () => {
  it("streams a tool call, runs memory_capture, then streams the answer", async () => {
    const person = await newPerson();
    const result = streamText({
      model: createChatModel(config(), env),
      tools: turnTools({
        db: testDatabase(),
        userId: person.id,
        embedder: createEmbedder(config(), env),
        source: { kind: "test", externalId: "oa-1" },
      }),
      stopWhen: isStepCount(3),
      prompt: "I just finished reading Hyperion",
    });
    const text = await result.text;
    const steps = await result.steps;
    expect(steps[0]?.toolCalls.map((c) => c.toolName)).toEqual(["memory_capture"]);
    expect(text).toMatch(/^Done\. Tool said: .*"created":true/);
    const rows = (await testDatabase().withUser(person.id, (tx) =>
      tx.execute(sql`select name, vector_dims(embedding) as dims from entities`),
    )) as unknown as unknown[];
    expect(rows).toEqual([{ name: "Hyperion", dims: 1024 }]);

    const requests = (await (await fetch(`${env.STAND_IN_URL}/__requests`)).json()) as Array<{
      stream: boolean;
      tools?: Array<{ function: { name: string } }>;
    }>;
    const last = requests.at(-1);
    expect(last?.stream).toBe(true);
    expect(last?.tools?.map((t) => t.function.name)).toEqual(
      expect.arrayContaining(["memory_capture", "memory_recall", "memory_forget", "memory_update", "memory_relate", "schedule_create"]),
    );
  });

  it("answers plain text without tools", async () => {
    const result = streamText({ model: createChatModel(config(), env), prompt: "hello" });
    expect(await result.text).toBe("Hello from the stand-in model.");
  });
});

describe("embeddings", () => {
  it("openai-compatible returns unit vectors of 1024 dimensions", async () => {
    const [vector] = await createEmbedder(config(), env).embed(["Dune"]);
    expect(vector).toHaveLength(1024);
    expect(Math.hypot(...vector!)).toBeCloseTo(1, 5);
  });

  it("local is deterministic and puts related words closer than unrelated ones", async () => {
    const [a, b, c, again] = await localEmbedder.embed(["books", "book", "volcano", "books"]);
    const cosine = (x: number[], y: number[]) => x.reduce((s, v, i) => s + v * y[i]!, 0);
    expect(again).toEqual(a);
    expect(cosine(a!, b!)).toBeGreaterThan(cosine(a!, c!));
  });

  it("workers-ai without the binding fails with a clear message", async () => {
    await expect(createEmbedder({ ...loadConfig(env), EMBEDDING_PROVIDER: "workers-ai" }, {}).embed(["x"])).rejects.toThrow(/AI binding/);
  });
});
