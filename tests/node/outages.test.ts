// Outages under `npm start`, run as a separate process: Postgres stopped for a minute in the middle of
// a turn, and a Bot API that stops answering. What a person sees: one outage notice while memory is
// unreachable (never the apology for an outage this short), then the answer, once, with its memory
// written; replies held up by Telegram delivered once each, in order, when it answers again.
import postgres from "postgres";
import { describe, expect, inject, it } from "vitest";
import { APOLOGY, OUTAGE_NOTICE } from "../../agents/inbox-policy";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../../ops/embedded-postgres";
import { freePort } from "./helpers";
import { WEBHOOK_SECRET, launch, tempDir, type Service } from "./service-process";
import { hang, health, randomChatId, sent, subjectOf, webhook } from "./service-http";
import { sleep, waitFor } from "./wait";
import { registerServiceHooks } from "./service-hooks";

const standIn = inject("standInUrl");
let database: EmbeddedPostgres | undefined;
const services = registerServiceHooks(standIn, async () => {
  await database?.stop().catch(() => {});
  database = undefined;
});

let updateId = 300_000_000 + Math.floor(Math.random() * 1e8);
let statuses: Array<{ text: string; status: number; ms: number }> = [];
async function post(service: Service, chatId: number, text: string): Promise<number> {
  const started = Date.now();
  const status = await webhook(service.url, WEBHOOK_SECRET, chatId, ++updateId, text);
  statuses.push({ text, status, ms: Date.now() - started });
  return status;
}

describe("outages while npm start runs", () => {
  it("Postgres stopped for 60 s mid-turn: the message is answered once, with its memory written, when it is back", async () => {
    statuses = [];
    const dataDir = tempDir("soma-outage-pg-");
    database = await startEmbeddedPostgres({ dataDir });
    const service = await launch({
      stateDir: tempDir("soma-outage-"),
      port: await freePort(),
      standIn: services.tap().url,
      env: { DATABASE_URL: database.url },
    });
    const chatId = randomChatId();
    expect(await post(service, chatId, "/start")).toBe(200);
    await waitFor(async () => (await sent(standIn, chatId)).length >= 1, 20_000, "the welcome");
    const replies = async () => (await sent(standIn, chatId)).slice(1);

    const release = await hang(standIn, "chat");
    const hungAt = Date.now();
    expect(await post(service, chatId, "I just finished reading Solaris")).toBe(200);
    await waitFor(() => services.tap().modelRequests("Solaris", hungAt).length > 0, 30_000, "the turn to reach the model");

    await database.stop();
    const downAt = Date.now();
    // The model answers now: its memory_capture meets a database that is gone.
    await release();
    const releasedAt = Date.now();

    await waitFor(async () => (await replies()).length > 0, 25_000, "the outage notice").catch(async (error: Error) => {
      throw new Error(`${error.message}; texts so far: ${JSON.stringify(await replies())}`);
    });
    const noticeAfterMs = Date.now() - releasedAt;
    expect(await replies(), "only the notice while memory is unreachable").toEqual([OUTAGE_NOTICE]);
    // Sixty seconds down in all: nothing more meanwhile (no apology, no answer, no second notice).
    while (Date.now() < downAt + 60_000) {
      const texts = await replies();
      if (texts.length !== 1) break;
      await sleep(1000);
    }
    expect(await replies(), "only the notice during the whole outage").toEqual([OUTAGE_NOTICE]);

    database = await startEmbeddedPostgres({ dataDir, port: database.port });
    const backAt = Date.now();
    await waitFor(
      async () => (await replies()).some((text) => subjectOf(text, services.tap(), ["Solaris"]) === "Solaris"),
      30_000,
      "the answer once the database is back",
    ).catch(async (error: Error) => {
      throw new Error(`${error.message}; texts so far: ${JSON.stringify(await replies())}`);
    });
    console.log(
      JSON.stringify({
        measure: "postgres-outage",
        outage_ms: backAt - downAt,
        notice_after_release_ms: noticeAfterMs,
        back_to_answer_ms: Date.now() - backAt,
      }),
    );
    await sleep(3000); // a second copy would arrive by now

    const texts = await replies();
    expect(
      texts.filter((text) => text === APOLOGY),
      "no apology",
    ).toEqual([]);
    expect(texts.map((text) => (text === OUTAGE_NOTICE ? "notice" : (subjectOf(text, services.tap(), ["Solaris"]) ?? text)))).toEqual([
      "notice",
      "Solaris",
    ]);

    const owner = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      const rows = await owner<{ name: string }[]>`select name from entities where name = 'Solaris'`;
      expect(
        rows.map((row) => row.name),
        "one memory of Solaris",
      ).toEqual(["Solaris"]);
    } finally {
      await owner.end();
    }
    expect(
      statuses.filter((s) => s.status >= 500),
      "webhook 5xx",
    ).toEqual([]);
    expect(await health(service.url)).toBe(200);
  }, 170_000);

  it("a Bot API that hangs: the inbox is not held past the deadline, and every reply is delivered once when it answers", async () => {
    statuses = [];
    const deadlineSeconds = 2;
    const service = await launch({
      stateDir: tempDir("soma-outage-bot-"),
      port: await freePort(),
      standIn: services.tap().url,
      env: { TELEGRAM_API_TIMEOUT_SECONDS: String(deadlineSeconds) },
    });
    const chatId = randomChatId();

    const release = await hang(standIn, "sendMessage", `"chat_id":${chatId}`);
    const hungAt = Date.now();
    expect(await post(service, chatId, "I read Beloved")).toBe(200);
    expect(await post(service, chatId, "I read Kindred")).toBe(200);
    // Acknowledged at once: storing a message never waits for Telegram.
    expect(
      statuses.map((s) => s.ms).every((ms) => ms < 5000),
      `webhook times ${JSON.stringify(statuses)}`,
    ).toBe(true);

    await sleep(8000);
    // Each attempt is abandoned at the deadline (the stand-in then drops it: nothing recorded) and
    // tried again: a held call never holds the inbox longer than TELEGRAM_API_TIMEOUT_SECONDS.
    const attempts = services
      .tap()
      .botAttempts("sendMessage", chatId)
      .filter((a) => a.at >= hungAt);
    const heldFor = attempts.map((a) => (a.gaveUpAt ?? Date.now()) - a.at);
    console.log(JSON.stringify({ measure: "bot-api-hang", attempts_during_hang: attempts.length, held_ms: heldFor }));
    expect(await sent(standIn, chatId), "nothing delivered while the Bot API hangs").toEqual([]);
    expect(attempts.length, "attempts while the Bot API hangs").toBeGreaterThanOrEqual(2);
    for (const attempt of attempts.filter((a) => a.gaveUpAt !== undefined)) {
      expect(attempt.gaveUpAt! - attempt.at, "an attempt held past the deadline").toBeLessThan(deadlineSeconds * 1000 + 1500);
    }

    await release();
    const releasedAt = Date.now();
    const subjects = async () =>
      (await sent(standIn, chatId)).map((text) => subjectOf(text, services.tap(), ["Beloved", "Kindred"]) ?? text);
    await waitFor(
      async () => {
        const seen = await subjects();
        return seen.includes("Beloved") && seen.includes("Kindred");
      },
      30_000,
      "both replies after the Bot API answers again",
    ).catch(async (error: Error) => {
      throw new Error(`${error.message}; texts so far: ${JSON.stringify(await sent(standIn, chatId))}`);
    });
    console.log(JSON.stringify({ measure: "bot-api-hang", release_to_both_delivered_ms: Date.now() - releasedAt }));
    await sleep(3000);

    const texts = await sent(standIn, chatId);
    expect(
      texts.filter((text) => text === APOLOGY),
      "no apology",
    ).toEqual([]);
    expect(await subjects(), "one reply each, in order").toEqual(["Beloved", "Kindred"]);
    expect(
      statuses.filter((s) => s.status >= 500),
      "webhook 5xx",
    ).toEqual([]);
    expect(await health(service.url)).toBe(200);
  }, 90_000);
});
