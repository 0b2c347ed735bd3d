// Guards "deleting your account removes it, and nothing brings it back by itself": the rows go (with a
// tombstone per sign-in identity for a day), no way in — a redelivered Telegram update, Google sign-in —
// recreates the person meanwhile, only a /start sent after the deletion begins afresh, and the Google
// grant, Gmail watch, Langfuse traces and PostHog person are asked to go, with deadlines, after the rows;
// the dead letters holding their words go too, found by their id and by their Telegram id.
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../platform/config";
import { WELCOME } from "../../agents/commands/index";
import { deadLetters, MAX_STORE_ATTEMPTS } from "../../agents/dead-letters";
import { prepareOutsideErasure } from "../../agents/integrations/outside-erasure";
import { deletePerson } from "../../db/repositories/auth";
import { saveConnection } from "../../db/repositories/connections";
import { agentFor } from "../../worker/agent-routing";
import { TokenCipher } from "../../db/token-cipher";
import { DELETED_NOTICE } from "../../worker/telegram/updates";
import { botReplies, call, callWithEnv, newChatId, newPerson, sessionCookie, testDatabase, waitForReplies } from "./helpers";

let nextUpdate = 850_000_000 + Math.floor(Math.random() * 1e7);
const ORIGIN = "https://soma.test";

function telegramMessage(chatId: number, text: string, sentAt = Date.now()) {
  const updateId = ++nextUpdate;
  return call("/api/messenger/webhook", {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": env.TELEGRAM_WEBHOOK_SECRET },
    body: JSON.stringify({
      update_id: updateId,
      message: {
        message_id: updateId % 100000,
        date: Math.floor(sentAt / 1000),
        chat: { id: chatId, type: "private" },
        from: { id: chatId, is_bot: false, first_name: "Lin" },
        text,
      },
    }),
  });
}

async function webhookReply(response: Response): Promise<Record<string, unknown> | null> {
  expect(response.status).toBe(200);
  const text = await response.text();
  return text ? (JSON.parse(text) as Record<string, unknown>) : null;
}

async function people(where: ReturnType<typeof sql>): Promise<string[]> {
  const rows = (await testDatabase().withAuth((tx) => tx.execute(sql`select id from auth.users where ${where}`))) as unknown as Array<{
    id: string;
  }>;
  return rows.map((row) => row.id);
}

function deleteAccount(cookie: string, overrides?: Record<string, unknown>) {
  const init = { method: "DELETE", headers: { cookie, origin: ORIGIN } };
  return overrides ? callWithEnv(overrides, "/api/account", init) : call("/api/account", init);
}

interface Erasure {
  service: string;
  path: string;
  authorization: string | null;
  body: string;
}
async function erasures(): Promise<Erasure[]> {
  return (await (await fetch(`${env.STAND_IN_URL}/__erasure`)).json()) as Erasure[];
}

/** A person with a connected Gmail whose tokens the OAuth stand-in knows (ya29.access-<sub>, 1//refresh-<sub>). */
async function personWithGmail() {
  const person = await newPerson("erase");
  const sub = crypto.randomUUID();
  const cipher = new TokenCipher(env.TOKEN_ENCRYPTION_KEY);
  await testDatabase().withUser(person.id, async (tx) =>
    saveConnection(tx, person.id, {
      provider: "google",
      accountEmail: `${sub}@gmail.example`,
      scope: "https://www.googleapis.com/auth/gmail.readonly",
      accessTokenEnc: await cipher.encrypt(`ya29.access-${sub}`, { userId: person.id, provider: "google", column: "access_token" }),
      refreshTokenEnc: await cipher.encrypt(`1//refresh-${sub}`, { userId: person.id, provider: "google", column: "refresh_token" }),
      accessTokenExpiresAt: new Date(Date.now() + 3_000_000),
    }),
  );
  return { person, sub };
}

describe("finding 8: account deletion — nothing recreates the person, outside services are asked to forget", () => {
  it("a redelivered or new Telegram message creates nobody and is told once; a /start sent afterwards begins a new account", async () => {
    const chatId = newChatId();
    const before = Date.now() - 5_000;
    expect(await webhookReply(await telegramMessage(chatId, "/start"))).toBeNull();
    await waitForReplies(chatId, 1);
    const [personId] = await people(sql`telegram_user_id = ${chatId}`);
    expect((await deleteAccount(await sessionCookie({ id: personId!, displayName: "" }))).status).toBe(200);

    // Telegram redelivers an update from before the deletion, then the person writes again.
    expect(await webhookReply(await telegramMessage(chatId, "/start", before))).toEqual({
      method: "sendMessage",
      chat_id: chatId,
      text: DELETED_NOTICE,
    });
    expect(await webhookReply(await telegramMessage(chatId, "I just finished reading Dune"))).toBeNull();
    expect(await webhookReply(await telegramMessage(chatId, "/login"))).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 300)); // an agent's reply would have arrived by now
    expect(await people(sql`telegram_user_id = ${chatId}`)).toEqual([]);
    expect(await botReplies(chatId)).toEqual([WELCOME]);

    // The person asks for a new account.
    expect(await webhookReply(await telegramMessage(chatId, "/start"))).toBeNull();
    expect(await waitForReplies(chatId, 2)).toEqual([WELCOME, WELCOME]);
    const [fresh] = await people(sql`telegram_user_id = ${chatId}`);
    expect(fresh).toBeDefined();
    expect(fresh).not.toBe(personId);
  });

  it("a sender another isolate still has cached reaches the erased agent, which refuses: the person is told, nothing is stored", async () => {
    const chatId = newChatId();
    await telegramMessage(chatId, "/start");
    await waitForReplies(chatId, 1);
    const [personId] = await people(sql`telegram_user_id = ${chatId}`);
    // The deletion as another isolate runs it: the webhook's isolate keeps the sender cached.
    await deletePerson(testDatabase(), personId!);
    await (await agentFor(env, personId!)).eraseAll();

    expect(await webhookReply(await telegramMessage(chatId, "I just finished reading Dune"))).toEqual({
      method: "sendMessage",
      chat_id: chatId,
      text: DELETED_NOTICE,
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await people(sql`telegram_user_id = ${chatId}`)).toEqual([]);
    expect(await botReplies(chatId)).toEqual([WELCOME]);
  });

  it("deletes the dead letters that hold the person's words: the agent's, and the webhook's that only know their Telegram id", async () => {
    const chatId = newChatId();
    const other = newChatId();
    await telegramMessage(chatId, "/start");
    await waitForReplies(chatId, 1);
    const [personId] = await people(sql`telegram_user_id = ${chatId}`);
    const letters = deadLetters(env);
    // Updates that could not be stored (before anyone knew whose they were), and one the agent set aside.
    const webhookLetter = (updateId: number, sender: number) => ({
      key: `webhook:${updateId}`,
      personId: null,
      senderId: sender,
      updateId,
      chatId: sender,
      text: "my private words",
      error: "TypeError: for the test",
    });
    const mine = ++nextUpdate;
    const theirs = ++nextUpdate;
    for (let attempt = 0; attempt < MAX_STORE_ATTEMPTS; attempt++) {
      await letters.failedToStore(webhookLetter(mine, chatId));
      await letters.failedToStore(webhookLetter(theirs, other));
    }
    await letters.add({
      key: `${personId}:telegram:${mine}`,
      personId: personId!,
      senderId: chatId,
      updateId: mine,
      chatId,
      text: "mine too",
      error: "x",
      attempts: 3,
    });
    const keys = async () => (await letters.list(1000)).map((l) => l.key);
    expect(await keys()).toEqual(expect.arrayContaining([`webhook:${mine}`, `webhook:${theirs}`, `${personId}:telegram:${mine}`]));

    expect((await deleteAccount(await sessionCookie({ id: personId!, displayName: "" }))).status).toBe(200);
    const left = await keys();
    expect(left).not.toContain(`webhook:${mine}`);
    expect(left).not.toContain(`${personId}:telegram:${mine}`);
    expect(left).toContain(`webhook:${theirs}`);
  });

  it("Google sign-in for a just-deleted account is refused with a 403 that says why, and creates nobody", async () => {
    const sub = crypto.randomUUID();
    const signIn = async () => {
      const start = await call("/auth/google/start?intent=signin", { redirect: "manual" });
      const state = new URL(start.headers.get("location")!).searchParams.get("state");
      const flow = (start.headers.get("set-cookie") ?? "").split(";")[0]!;
      return call(`/auth/google/callback?code=good-${sub}&state=${state}`, { headers: { cookie: flow }, redirect: "manual" });
    };
    const first = await signIn();
    expect(first.status).toBe(303);
    const session = first.headers
      .getSetCookie()
      .find((c) => c.startsWith("__Host-soma_session="))!
      .split(";")[0]!;
    expect((await deleteAccount(session)).status).toBe(200);

    const again = await signIn();
    expect(again.status).toBe(403);
    expect(await again.json()).toMatchObject({ error: { code: "forbidden", message: expect.stringContaining("was deleted") } });
    expect(again.headers.getSetCookie().filter((c) => c.startsWith("__Host-soma_session="))).toEqual([]);
    expect(await people(sql`google_sub = ${sub}`)).toEqual([]);
  });

  it("stops the Gmail watch, revokes the Google grant, deletes the Langfuse traces and the PostHog person", async () => {
    const { person, sub } = await personWithGmail();
    const trace = crypto.randomUUID();
    const kept = crypto.randomUUID();
    await fetch(`${env.STAND_IN_URL}/api/public/ingestion`, {
      method: "POST",
      body: JSON.stringify({
        batch: [
          { id: crypto.randomUUID(), type: "trace-create", body: { id: trace, userId: person.id, name: "telegram-message" } },
          { id: crypto.randomUUID(), type: "span-create", body: { id: crypto.randomUUID(), traceId: trace, name: "tool:memory_recall" } },
          { id: crypto.randomUUID(), type: "trace-create", body: { id: kept, userId: crypto.randomUUID(), name: "telegram-message" } },
        ],
      }),
    });

    const response = await deleteAccount(await sessionCookie(person), {
      POSTHOG_PERSONAL_API_KEY: "phx_test_personal",
      POSTHOG_PROJECT_ID: "4242",
    });
    expect(response.status).toBe(200);
    expect(await people(sql`id = ${person.id}`)).toEqual([]);

    const calls = await erasures();
    expect(calls.filter((c) => c.service === "gmail-stop" && c.authorization === `Bearer ya29.access-${sub}`)).toHaveLength(1);
    expect(
      calls.filter((c) => c.service === "google-revoke" && new URLSearchParams(c.body).get("token") === `1//refresh-${sub}`),
    ).toHaveLength(1);
    const posthog = calls.filter((c) => c.service === "posthog" && c.body.includes(person.id));
    expect(posthog).toEqual([
      {
        service: "posthog",
        path: "/api/projects/4242/persons/bulk_delete/",
        authorization: "Bearer phx_test_personal",
        body: JSON.stringify({ distinct_ids: [person.id], delete_events: true }),
      },
    ]);
    const traces = async (userId?: string) =>
      (
        (await (await fetch(`${env.STAND_IN_URL}/api/public/traces${userId ? `?userId=${userId}` : ""}`)).json()) as {
          data: Array<{ id: string }>;
        }
      ).data.map((t) => t.id);
    expect(await traces(person.id)).toEqual([]);
    expect(await traces()).toContain(kept);
  });

  it("a hanging Google does not hold the deletion: the rows are gone at once, and the erasure gives up at its deadline", async () => {
    const { person, sub } = await personWithGmail();
    const hang = { target: "google-revoke", match: encodeURIComponent(`1//refresh-${sub}`) };
    await fetch(`${env.STAND_IN_URL}/__hang`, { method: "POST", body: JSON.stringify(hang) });
    try {
      const erase = await prepareOutsideErasure(loadConfig(env), testDatabase(), person.id);
      const started = Date.now();
      const report = await erase(500);
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(report.google).toMatch(/^failed: .*google did not answer within 500 ms/);
      expect(report.langfuse).toBe("deleted 0 traces");
      expect(report.posthog).toMatch(/^not configured/);

      const response = await deleteAccount(await sessionCookie(person));
      expect(response.status).toBe(200);
      expect(await people(sql`id = ${person.id}`)).toEqual([]);
    } finally {
      await fetch(`${env.STAND_IN_URL}/__release`, { method: "POST", body: JSON.stringify(hang) });
    }
  });
});
