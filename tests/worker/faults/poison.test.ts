// No poison pill: an update that cannot be stored, or a message that cannot be answered, for a reason
// that is not an outage is retried a few times, then kept as a dead letter with its error and
// acknowledged; it never blocks the person's later messages and is never redelivered forever.
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { runInDurableObject } from "cloudflare:test";
import { APICallError } from "ai";
import { describe, expect, it } from "vitest";
import { OfflineModel } from "../../../agents/integrations/model/offline-model";
import { MAX_STORE_ATTEMPTS } from "../../../agents/dead-letters";
import { APOLOGY } from "../../../agents/inbox-policy";
import type { UserAgent } from "../../../agents/user-agent";
import { createPerson } from "../../../db/repositories/auth";
import { botCalls, call, newChatId, sessionCookie, testDatabase, waitForReplies } from "../helpers";
import { footprint, newUpdateId, postUpdate, textUpdate } from "./support";

interface DeadLetterView {
  key: string;
  origin: string;
  personId: string | null;
  senderId: number | null;
  updateId: number | null;
  error: string;
  attempts: number;
  textLength: number;
  textPreview: string;
}

async function deadLetters(): Promise<DeadLetterView[]> {
  const response = await call("/api/ops/dead-letters?limit=1000");
  expect(response.status).toBe(200);
  return ((await response.json()) as { deadLetters: DeadLetterView[] }).deadLetters;
}

describe("a poison update at the webhook", () => {
  it("is refused for redelivery a few times, then dead-lettered with its error and acknowledged", async () => {
    const chatId = newChatId();
    const updateId = newUpdateId();
    // Storing fails for a reason that is not an outage (here: the agent rejects the stored shape, as a
    // bug or a changed contract would) while Postgres is up.
    const agents = {
      idFromName: (name: string) => env.UserAgent.idFromName(name),
      get: () => ({
        __unsafe_ensureInitialized: async () => {},
        enqueueTelegramMessage: async () => {
          throw new TypeError("Cannot read properties of undefined (reading 'text')");
        },
      }),
    };
    const { callWithEnv } = await import("../helpers");
    const post = () =>
      callWithEnv({ UserAgent: agents }, "/api/messenger/webhook", {
        method: "POST",
        headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": env.TELEGRAM_WEBHOOK_SECRET },
        body: JSON.stringify(textUpdate(chatId, "hello", updateId)),
      });
    const statuses: number[] = [];
    for (let delivery = 0; delivery < MAX_STORE_ATTEMPTS + 2; delivery++) statuses.push((await post()).status);
    expect(statuses).toEqual([...Array(MAX_STORE_ATTEMPTS - 1).fill(500), 200, 200, 200]);
    const letter = (await deadLetters()).find((l) => l.key === `webhook:${updateId}`);
    // No person yet (storing failed before the agent had it), but the sender's Telegram id: what an
    // account deletion finds it by.
    expect(letter).toMatchObject({ origin: "webhook", personId: null, senderId: chatId, updateId, textPreview: "hello", textLength: 5 });
    expect(letter!.attempts).toBeGreaterThanOrEqual(MAX_STORE_ATTEMPTS);
    expect(letter!.error).toMatch(/TypeError: Cannot read properties/);
    expect(await botCalls(chatId)).toEqual([]);
  });

  it("an outage is never dead-lettered: a sender the database cannot be reached for gets 500 every time", async () => {
    const chatId = newChatId();
    const updateId = newUpdateId();
    const down = { HYPERDRIVE: { connectionString: env.HANGING_DATABASE_URL.replace(/:\d+\//, ":1/") } };
    const { callWithEnv } = await import("../helpers");
    const post = () =>
      callWithEnv(down, "/api/messenger/webhook", {
        method: "POST",
        headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": env.TELEGRAM_WEBHOOK_SECRET },
        body: JSON.stringify(textUpdate(chatId, "hello", updateId)),
      });
    const statuses: number[] = [];
    for (let delivery = 0; delivery < MAX_STORE_ATTEMPTS + 1; delivery++) statuses.push((await post()).status);
    expect(statuses).toEqual(Array(MAX_STORE_ATTEMPTS + 1).fill(500));
    expect((await deadLetters()).some((l) => l.key === `webhook:${updateId}`)).toBe(false);
  });
});

describe("a poison message in the inbox", () => {
  it("is set aside after a few attempts with the apology; the messages behind it are answered; operators see it", async () => {
    const chatId = newChatId();
    const person = await createPerson(testDatabase(), { displayName: "Poison", telegramUserId: chatId, telegramChatId: chatId });
    // A model provider that refuses one input every time (a 400: a permanent failure, not an outage).
    const agent = await getAgentByName(env.UserAgent, person.id);
    await runInDurableObject(agent, (instance: UserAgent) => {
      const offline = new OfflineModel();
      instance.modelOverride = Object.assign(Object.create(offline) as OfflineModel, {
        doStream: (options: Parameters<OfflineModel["doStream"]>[0]) => {
          if (JSON.stringify(options.prompt.findLast((m) => m.role === "user")).includes("POISON")) {
            throw new APICallError({
              message: "the provider refuses this input",
              url: "https://model.test",
              requestBodyValues: {},
              statusCode: 400,
              isRetryable: false,
            });
          }
          return offline.doStream(options);
        },
      });
    });
    const poison = textUpdate(chatId, "Summarise this for me: POISON");
    for (const update of [poison, textUpdate(chatId, "I read Nightwood")]) expect((await postUpdate(update)).status).toBe(200);
    const replies = await waitForReplies(chatId, 2, 15_000);
    expect(replies).toEqual([APOLOGY, "Noted: Nightwood (book). I'll remember it."]);
    const letter = (await deadLetters()).find((l) => l.key === `${person.id}:telegram:${poison.update_id}`);
    expect(letter).toMatchObject({ origin: "inbox", personId: person.id, senderId: chatId, updateId: poison.update_id, attempts: 3 });
    expect(letter!.error).toMatch(/refuses this input/);
    // Kept in the conversation, with the apology after it, where the person can see it.
    const transcript = await runInDurableObject(agent, (instance: UserAgent) =>
      instance.messages.map((m) => `${m.role}: ${m.parts.map((p) => (p.type === "text" ? p.text : "")).join("")}`),
    );
    expect(transcript.slice(0, 2)).toEqual(["user: Summarise this for me: POISON", `assistant: ${APOLOGY}`]);
    const states = await runInDurableObject(agent, (instance: UserAgent) =>
      [...instance.sql<{ state: string }>`select state from soma_inbox order by sort_key`].map((r) => r.state),
    );
    expect(states).toEqual(["dead", "done"]);
    expect(await footprint(person.id)).toMatchObject({ entities: 1 });

    // Deleting the account deletes the dead letters that hold their words.
    const deleted = await call("/api/account", {
      method: "DELETE",
      headers: { cookie: await sessionCookie(person), origin: "https://soma.test" },
    });
    expect(deleted.status).toBe(200);
    expect((await deadLetters()).some((l) => l.personId === person.id)).toBe(false);
  });
});

describe("GET /api/ops/dead-letters", () => {
  it("answers a bad limit with 400 JSON", async () => {
    const response = await call("/api/ops/dead-letters?limit=0");
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: "bad_request" } });
  });

  it("needs the operator token when one is set, and is off in production without one", async () => {
    const { callWithEnv } = await import("../helpers");
    const withToken = { OPS_TOKEN: "ops-token-for-tests" };
    expect((await callWithEnv(withToken, "/api/ops/dead-letters")).status).toBe(401);
    expect((await callWithEnv(withToken, "/api/ops/dead-letters", { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
    expect(
      (await callWithEnv(withToken, "/api/ops/dead-letters", { headers: { authorization: "Bearer ops-token-for-tests" } })).status,
    ).toBe(200);
    const production = await callWithEnv(
      { ENVIRONMENT: "production", SESSION_SECRET: "s".repeat(32), MAIL_PUSH_TOKEN: "m" },
      "/api/ops/dead-letters",
    );
    expect(production.status).toBe(401);
    expect(await production.json()).toMatchObject({ error: { code: "unauthorized", message: expect.stringMatching(/OPS_TOKEN/) } });
  });
});
