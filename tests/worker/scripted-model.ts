// Scripted models for the real AI SDK tool loop: each step is a tool call or a text answer, consumed
// one per model call (MockLanguageModelV4 from ai/test). Never a real model.
import type { LanguageModelV4GenerateResult, LanguageModelV4StreamPart } from "@ai-sdk/provider";
import { MockLanguageModelV4 } from "ai/test";

export type Step = { tool: string; input: Record<string, unknown> } | { text: string } | { fail: string };

const usage = {
  inputTokens: { total: 10, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

export function scriptedModel(steps: Step[]): MockLanguageModelV4 {
  let index = 0;
  const next = (): Step => steps[Math.min(index++, steps.length - 1)]!;
  return new MockLanguageModelV4({
    doGenerate: async () => {
      const step = next();
      if ("fail" in step) throw new Error(step.fail);
      return generated(step, index);
    },
    doStream: async () => {
      const step = next();
      if ("fail" in step) throw new Error(step.fail);
      const parts: LanguageModelV4StreamPart[] = [{ type: "stream-start", warnings: [] }];
      if ("tool" in step) {
        parts.push({ type: "tool-call", toolCallId: `call-${index}`, toolName: step.tool, input: JSON.stringify(step.input) });
      } else {
        parts.push({ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: step.text }, { type: "text-end", id: "t" });
      }
      parts.push({ type: "finish", usage, finishReason: { unified: "tool" in step ? "tool-calls" : "stop", raw: undefined } });
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const part of parts) controller.enqueue(part);
            controller.close();
          },
        }),
      };
    },
  });
}

function generated(step: Exclude<Step, { fail: string }>, index: number): LanguageModelV4GenerateResult {
  return {
    content:
      "tool" in step
        ? [{ type: "tool-call", toolCallId: `call-${index}`, toolName: step.tool, input: JSON.stringify(step.input) }]
        : [{ type: "text", text: step.text }],
    finishReason: { unified: "tool" in step ? "tool-calls" : "stop", raw: undefined },
    usage,
    warnings: [],
  };
}
