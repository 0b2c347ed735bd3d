// Guards turn traces: every model turn from Telegram is one Langfuse trace tagged bot + message (web:
// web + chat) with the person, input, output and each tool call; commands are not model turns; no
// secret or token ever appears in what is sent, even when a person types one (finding 9e). Langfuse is
// a local stand-in.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { chatAs, newChatId, newPerson, sessionCookie } from "./helpers";
import { converse, personOfChat } from "./telegram-updates";

interface LangfuseEvent {
  type: string;
  body: {
    id?: string;
    traceId?: string;
    name?: string;
    userId?: string;
    tags?: string[];
    input?: unknown;
    output?: unknown;
    metadata?: Record<string, unknown>;
  };
  authorization?: string;
}

async function events(): Promise<LangfuseEvent[]> {
  return (await (await fetch(`${env.STAND_IN_URL}/__langfuse`)).json()) as LangfuseEvent[];
}

async function tracesOf(userId: string, count: number): Promise<{ traces: LangfuseEvent[]; all: LangfuseEvent[] }> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const all = await events();
    const ids = new Set(all.filter((e) => e.type === "trace-create" && e.body.userId === userId).map((e) => e.body.id));
    const mine = all.filter((e) => ids.has(e.body.id) || ids.has(e.body.traceId));
    const traces = mine.filter((e) => e.type === "trace-create");
    const finished = new Set(traces.filter((t) => t.body.output !== undefined).map((t) => t.body.id));
    if (finished.size >= count || Date.now() > deadline) return { traces, all: mine };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The latest state of each trace (trace-create events are upserts). */
function latest(traces: LangfuseEvent[]) {
  const byId = new Map<string, LangfuseEvent["body"]>();
  for (const t of traces)
    byId.set(t.body.id!, { ...byId.get(t.body.id!), ...Object.fromEntries(Object.entries(t.body).filter(([, v]) => v !== undefined)) });
  return [...byId.values()];
}

describe("Langfuse traces", () => {
  it("one trace per Telegram model turn, tagged bot and message, with the tool calls", async () => {
    const chatId = newChatId();
    await converse(chatId, ["/start", "I just finished reading Dune", "which books did I read?"]);
    const person = { id: await personOfChat(chatId) };
    const { traces, all } = await tracesOf(person.id, 2);
    const turns = latest(traces);
    expect(turns).toHaveLength(2);
    for (const turn of turns) expect(turn.tags).toEqual(["bot", "message"]);
    expect(turns.map((t) => t.input).sort()).toEqual(["I just finished reading Dune", "which books did I read?"]);
    expect(turns.map((t) => t.output).sort()).toEqual(["Noted: Dune (book). I'll remember it.", "Your books: Dune."]);
    const spans = all
      .filter((e) => e.type === "span-create")
      .map((e) => e.body.name)
      .sort();
    expect(spans).toEqual(["tool:memory_capture", "tool:memory_recall"]);

    const payload = JSON.stringify(all.map((e) => e.body));
    for (const secret of [env.TELEGRAM_BOT_TOKEN, env.TELEGRAM_WEBHOOK_SECRET, "sk-lf-test"]) expect(payload).not.toContain(secret);
  });

  it("web chat turns are tagged web and chat", async () => {
    const person = await newPerson();
    const cookie = await sessionCookie(person);
    expect(await chatAs(cookie, "I visited Oslo")).toBe("Noted: Oslo (place). I'll remember it.");
    const { traces } = await tracesOf(person.id, 1);
    expect(latest(traces)).toEqual([
      expect.objectContaining({ tags: ["web", "chat"], input: "I visited Oslo", output: "Noted: Oslo (place). I'll remember it." }),
    ]);
    const payload = JSON.stringify(traces);
    expect(payload).not.toContain(cookie.split("=")[1]);
  });

  it("9e: Langfuse payloads go through the same scrubbing as the other sinks", async () => {
    const person = await newPerson();
    const cookie = await sessionCookie(person);
    const googleToken = `ya29.a0Af${crypto.randomUUID().replaceAll("-", "")}`;
    await chatAs(
      cookie,
      `I read Dune. My bot token is ${env.TELEGRAM_BOT_TOKEN}, my Gmail token ${googleToken}, the webhook secret ${env.TELEGRAM_WEBHOOK_SECRET}`,
    );
    const { traces, all } = await tracesOf(person.id, 1);
    const [turn] = latest(traces);
    expect(String(turn!.input)).toMatch(
      /^I read Dune\. My bot token is \[redacted\], my Gmail token \[redacted\], the webhook secret \[redacted\]$/,
    );
    const payload = JSON.stringify(all.map((e) => e.body));
    for (const secret of [env.TELEGRAM_BOT_TOKEN, googleToken, env.TELEGRAM_WEBHOOK_SECRET]) expect(payload).not.toContain(secret);
  });
});
