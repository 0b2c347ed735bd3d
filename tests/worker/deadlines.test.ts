// Guards the deadlines on Soma's outside calls: a hung Postgres, Bot API, embeddings server or Inngest
// costs a bounded wait and then a recognisable transient error (DeadlineError, or grammY's HttpError
// for one timed-out Bot API call), never an open-ended one. The hangs are real: a TCP server that
// accepts and never answers (HANGING_DATABASE_URL) and stand-ins holding requests (POST /__hang).
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { HttpError } from "grammy";
import type { EventEmitter } from "node:events";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../platform/config";
import { createEmbedder } from "../../agents/integrations/model/embeddings";
import { TelegramSender } from "../../agents/integrations/telegram-sender";
import { emitEvents, fetchWithDeadline } from "../../agents/workflows/client";
import { turnCompleted } from "../../agents/workflows/events";
import { DeadlineError, withDeadline } from "../../platform/deadline";
import { classifyFailure } from "../../platform/faults";
import { openWorkerdSocket, workerdDatabase } from "../../db/workerd-socket";
import { botCalls, newChatId } from "./helpers";

/** Holds the stand-in's requests to `target` whose body contains `match` (only this test's own). */
async function hang(target: string, match: string): Promise<() => Promise<void>> {
  const control = (path: string) =>
    fetch(`${env.STAND_IN_URL}${path}`, { method: "POST", body: JSON.stringify({ target, match }) }).then((r) => void r.body?.cancel());
  await control("/__hang");
  return () => control("/__release");
}

/** Runs `work` while the stand-in holds `target` requests matching `match`; how it settled and how long it took. */
async function whileHung<T>(target: string, match: string, work: () => Promise<T>) {
  const release = await hang(target, match);
  try {
    return await timed(work);
  } finally {
    await release();
  }
}

/** Runs `work`, returning how it settled and how long it took. */
async function timed<T>(work: () => Promise<T>): Promise<{ error: unknown; value: T | undefined; elapsed: number }> {
  const started = Date.now();
  try {
    const value = await work();
    return { error: undefined, value, elapsed: Date.now() - started };
  } catch (error) {
    return { error, value: undefined, elapsed: Date.now() - started };
  }
}

// Unhandled rejections raised anywhere in this isolate while a test runs (recycling a pool must leave none).
const unhandled: unknown[] = [];
const onUnhandled = (event: PromiseRejectionEvent) => void unhandled.push(event.reason);
beforeEach(() => {
  unhandled.length = 0;
  addEventListener("unhandledrejection", onUnhandled);
});
afterEach(() => removeEventListener("unhandledrejection", onUnhandled));

describe("withDeadline", () => {
  it("passes a value or an error through, and clears its timer", async () => {
    await expect(withDeadline(Promise.resolve(7), 50, "x")).resolves.toBe(7);
    await expect(withDeadline(Promise.reject(new Error("own")), 50, "x")).rejects.toThrow("own");
    await expect(withDeadline(async (signal) => (signal.aborted ? "aborted" : "live"), 50, "x")).resolves.toBe("live");
  });

  it("rejects with DeadlineError naming the dependency, and aborts the signal it handed out", async () => {
    let seen: AbortSignal | undefined;
    const { error, elapsed } = await timed(() =>
      withDeadline(
        (signal) => {
          seen = signal;
          return new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(new Error("late"))));
        },
        100,
        "postgres",
      ),
    );
    expect(error).toBeInstanceOf(DeadlineError);
    expect(error).toMatchObject({ name: "DeadlineError", what: "postgres", ms: 100 });
    // An expired deadline is an outage to wait out, also when another error wraps it.
    expect(classifyFailure(error)).toBe("transient");
    expect(classifyFailure(new Error("other", { cause: error }))).toBe("transient");
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toBe(error);
    expect(elapsed).toBeGreaterThanOrEqual(90);
    expect(elapsed).toBeLessThan(1000);
  });
});

describe("Postgres", () => {
  it("gives up on a hung server at the transaction deadline, and recycles the pool each time", async () => {
    let opened = 0;
    let closed = 0;
    const socket = async (options: { host: string[]; port: number[] }) => {
      const s: EventEmitter = await openWorkerdSocket(options);
      opened++;
      s.once("close", () => closed++);
      return s;
    };
    const db = workerdDatabase(env.HANGING_DATABASE_URL, { socket, max: 1, transactionDeadlineMs: 300 });

    const first = await timed(() => db.withSystem((tx) => tx.execute(sql`select 1`)));
    expect(first.error).toBeInstanceOf(DeadlineError);
    expect(first.error).toMatchObject({ what: "postgres" });
    expect(first.elapsed).toBeLessThan(1500);
    // The hung connection is ended, not left waiting for an answer that never comes.
    await expect.poll(() => closed, { timeout: 2000, interval: 20 }).toBe(1);
    expect(opened).toBe(1);

    // The same Database opens a fresh pool (the one connection of the old pool would otherwise be busy
    // for ever), and gives up on time again.
    const second = await timed(() => db.withUser(crypto.randomUUID(), (tx) => tx.execute(sql`select 1`)));
    expect(second.error).toBeInstanceOf(DeadlineError);
    expect(second.elapsed).toBeLessThan(1500);
    expect(opened).toBe(2);
    await expect.poll(() => closed, { timeout: 2000, interval: 20 }).toBe(2);

    // A one-round-trip read (recall's) gives up at the same deadline, and recycles its pool too.
    const third = await timed(() => db.readAsUser(crypto.randomUUID(), [sql`select 1`]));
    expect(third.error).toBeInstanceOf(DeadlineError);
    expect(third.elapsed).toBeLessThan(1500);
    expect(opened).toBe(3);
    await expect.poll(() => closed, { timeout: 2000, interval: 20 }).toBe(3);

    // Ending the hung pools left no unhandled rejection behind (the worker suite fails on any).
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(unhandled).toEqual([]);
  });

  it("sets statement_timeout for each transaction, in the same round trip as the role", async () => {
    const read = (db: ReturnType<typeof workerdDatabase>) =>
      db.withSystem(
        async (tx) =>
          (await tx.execute(sql`select current_setting('statement_timeout') as timeout, current_user as role`)) as unknown as Array<{
            timeout: string;
            role: string;
          }>,
      );
    expect(await read(workerdDatabase(env.HYPERDRIVE.connectionString, { statementTimeoutMs: 1234 }))).toEqual([
      { timeout: "1234ms", role: "soma_system" },
    ]);
    expect(await read(workerdDatabase(env.HYPERDRIVE.connectionString))).toEqual([{ timeout: "10s", role: "soma_system" }]);
    // (The embedded test Postgres, PGlite, keeps the setting but cannot enforce it: it has no timer
    // signals. The cancellation itself, SQLSTATE 57014, is checked against a real PostgreSQL by
    // tests/node/statement-timeout.test.ts when one is installed.)
  });

  it("leaves a working database alone: a quick transaction well within its deadline commits", async () => {
    const db = workerdDatabase(env.HYPERDRIVE.connectionString, { transactionDeadlineMs: 5000 });
    const rows = (await db.withSystem((tx) => tx.execute(sql`select 1 as one`))) as unknown as Array<{ one: number }>;
    expect(rows).toEqual([{ one: 1 }]);
  });
});

describe("Bot API", () => {
  it("a hung sendMessage fails each attempt at the call timeout, as grammY's HttpError, and is not sent later", async () => {
    const chatId = newChatId();
    const sender = new TelegramSender(env.TELEGRAM_BOT_TOKEN, env.TELEGRAM_API_ROOT, { timeoutSeconds: 0.2, sleep: async () => {} });
    const result = await whileHung("sendMessage", `"chat_id":${chatId}`, () => sender.sendText(chatId, "hello?"));
    expect(result.error).toBeInstanceOf(HttpError);
    expect(String((result.error as HttpError).error)).toMatch(/timed out after 0.2 seconds/);
    // Four attempts of 0.2 s each.
    expect(result.elapsed).toBeGreaterThanOrEqual(700);
    expect(result.elapsed).toBeLessThan(3000);
    // Each timed-out request was cancelled: released, none of them reaches the chat.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await botCalls(chatId)).toEqual([]);
  });

  it("a whole send gives up at its deadline with DeadlineError, whatever the retries would still take", async () => {
    const chatId = newChatId();
    const sender = new TelegramSender(env.TELEGRAM_BOT_TOKEN, env.TELEGRAM_API_ROOT, { timeoutSeconds: 10, sendDeadlineMs: 400 });
    const result = await whileHung("sendMessage", `"chat_id":${chatId}`, () => sender.sendText(chatId, "hello?"));
    expect(result.error).toBeInstanceOf(DeadlineError);
    expect(result.error).toMatchObject({ what: "telegram", ms: 400 });
    expect(result.elapsed).toBeLessThan(1500);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await botCalls(chatId)).toEqual([]);
  });

  it("typing is bounded by its own short deadline and never throws", async () => {
    const chatId = newChatId();
    const sender = new TelegramSender(env.TELEGRAM_BOT_TOKEN, env.TELEGRAM_API_ROOT, { typingDeadlineMs: 300 });
    const result = await whileHung("sendChatAction", `"chat_id":${chatId}`, () => sender.typing(chatId));
    expect(result.error).toBeUndefined();
    expect(result.elapsed).toBeLessThan(1500);
  });
});

describe("embeddings", () => {
  /** Only this test embeds it: the hang holds no other suite's requests. */
  const HELD_TEXT = `held-${crypto.randomUUID()}`;
  const openAiCompatible = () => ({
    ...loadConfig(env),
    EMBEDDING_PROVIDER: "openai-compatible" as const,
    AI_BASE_URL: `${env.STAND_IN_URL}/v1`,
    AI_API_KEY: "test-key",
  });

  it("a hung embeddings server fails with DeadlineError at the deadline", async () => {
    const embedder = createEmbedder(openAiCompatible(), env, 300);
    const result = await whileHung("embeddings", HELD_TEXT, () => embedder.embed([HELD_TEXT]));
    expect(result.error).toBeInstanceOf(DeadlineError);
    expect(result.error).toMatchObject({ what: "embeddings" });
    expect(result.elapsed).toBeLessThan(1500);
    // Released, the same embedder answers as usual.
    const [vector] = await embedder.embed([HELD_TEXT]);
    expect(vector).toHaveLength(1024);
  });

  it("a Workers AI binding that never answers fails with DeadlineError at the deadline", async () => {
    // The AI binding cannot run in tests; this one stands in for a hung Workers AI.
    const hungAi = { run: () => new Promise<never>(() => {}) };
    const embedder = createEmbedder({ ...loadConfig(env), EMBEDDING_PROVIDER: "workers-ai" }, { AI: hungAi }, 300);
    const result = await timed(() => embedder.embed([HELD_TEXT]));
    expect(result.error).toBeInstanceOf(DeadlineError);
    expect(result.error).toMatchObject({ what: "embeddings" });
    expect(result.elapsed).toBeLessThan(1500);
  });
});

describe("Inngest", () => {
  it("emitEvents to a hung Inngest returns false at its deadline, then skips the address at once", async () => {
    const hungAddress = new URL(env.HANGING_DATABASE_URL);
    const config = loadConfig({ ...env, INNGEST_BASE_URL: `http://${hungAddress.host}/` });
    const event = () =>
      turnCompleted.create({
        userId: crypto.randomUUID(),
        channel: "web",
        source: { kind: "web", externalId: crypto.randomUUID() },
        text: "hi",
      });

    const first = await timed(() => emitEvents(config, event(), { test: "deadlines" }, 400));
    expect(first.value).toBe(false);
    expect(first.elapsed).toBeLessThan(1500);

    const again = await timed(() => emitEvents(config, event(), { test: "deadlines" }, 400));
    expect(again.value).toBe(false);
    expect(again.elapsed).toBeLessThan(50);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(unhandled).toEqual([]);
  });

  it("each request of the sending client has its own deadline (mail pushes send without emitEvents)", async () => {
    const hungAddress = new URL(env.HANGING_DATABASE_URL);
    const result = await timed(() => fetchWithDeadline(300)(`http://${hungAddress.host}/e/key`, { method: "POST", body: "[]" }));
    // undici's shape, which the SDK treats as a network failure; the cause says it was the deadline.
    expect(result.error).toBeInstanceOf(TypeError);
    expect((result.error as Error).message).toMatch(/^fetch failed/);
    expect((result.error as Error).cause).toBeInstanceOf(DeadlineError);
    expect(classifyFailure(result.error)).toBe("transient");
    expect((result.error as Error).cause).toMatchObject({ what: "inngest", ms: 300 });
    expect(result.elapsed).toBeLessThan(1500);
  });
});
