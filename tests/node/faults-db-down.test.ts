// Fault: Postgres goes away while Telegram updates arrive (npm start, the real Worker and agents). A
// sender the Worker already knows is acknowledged and stored in their agent's inbox; an unknown one
// is refused with 500, which Telegram redelivers. /api/health says db:false meanwhile. After the
// database is back, every message has been answered exactly once.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { OUTAGE_NOTICE } from "../../agents/inbox-policy";
import { afterAll, describe, expect, inject, it } from "vitest";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../../ops/embedded-postgres";
import { start, type Running } from "../../ops/start";
import { freePort } from "./helpers";

const standIn = inject("standInUrl");
const SECRET = "db-down-secret";
let app: Running | undefined;
let database: EmbeddedPostgres | undefined;
afterAll(async () => {
  await app?.stop();
  await database?.stop();
});

let updateId = Math.floor(Math.random() * 1e8);
async function post(chatId: number, text: string, id = ++updateId): Promise<number> {
  const response = await fetch(`${app!.url}/api/messenger/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": SECRET },
    body: JSON.stringify({
      update_id: id,
      message: {
        message_id: id % 1e6,
        date: 0,
        chat: { id: chatId, type: "private" },
        from: { id: chatId, is_bot: false, first_name: "Dee" },
        text,
      },
    }),
  });
  await response.arrayBuffer();
  return response.status;
}

async function replies(chatId: number, count: number, timeoutMs = 20_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const calls = (await (await fetch(`${standIn}/__calls?chat_id=${chatId}&method=sendMessage`)).json()) as Array<{
      payload: { text: string };
      view?: { text: string };
    }>;
    if (calls.length >= count || Date.now() > deadline) return calls.map((c) => c.view?.text ?? c.payload.text);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("the database down while updates arrive", () => {
  it("stores or refuses each update, reports db:false, and answers every message exactly once after recovery", async () => {
    const dataDir = mkdtempSync(`${tmpdir()}/soma-db-down-`);
    database = await startEmbeddedPostgres({ dataDir });
    app = await start(
      {
        PORT: String(await freePort()),
        DATABASE_URL: database.url,
        SOMA_STATE_DIR: mkdtempSync(`${tmpdir()}/soma-db-down-state-`),
        TELEGRAM_BOT_TOKEN: "515151:db-down-token",
        TELEGRAM_WEBHOOK_SECRET: SECRET,
        TELEGRAM_API_ROOT: standIn,
      },
      () => {},
    );
    const known = 610_000_000 + Math.floor(Math.random() * 1e6);
    const stranger = known + 1;
    expect(await post(known, "/start")).toBe(200);
    expect(await replies(known, 1)).toHaveLength(1);

    await database.stop();
    const health = await fetch(`${app.url}/api/health`);
    expect([health.status, ((await health.json()) as { db: boolean }).db]).toEqual([503, false]);

    // Known sender: acknowledged (the agent stores it). Unknown sender: refused, nothing stored.
    expect(await post(known, "hello while the database is down")).toBe(200);
    const strangerUpdate = ++updateId;
    expect(await post(stranger, "/start", strangerUpdate)).toBe(500);
    // The turn needs the person's profile from Postgres: it waits the outage out, with one notice.
    expect((await replies(known, 2))[1]).toBe(OUTAGE_NOTICE);

    database = await startEmbeddedPostgres({ dataDir, port: database.port });
    const back = await fetch(`${app.url}/api/health`);
    expect(back.status).toBe(200);
    // Telegram redelivers the refused update, possibly more than once.
    expect(await post(stranger, "/start", strangerUpdate)).toBe(200);
    expect(await post(stranger, "/start", strangerUpdate)).toBe(200);
    expect(await post(known, "I read Middlemarch")).toBe(200);

    const knownReplies = await replies(known, 4);
    const strangerReplies = await replies(stranger, 1);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await replies(known, 99, 0)).toHaveLength(4);
    expect(await replies(stranger, 99, 0)).toHaveLength(1);
    // The message sent during the outage is answered once it is over, then the next one, in order.
    expect(knownReplies[2]).toMatch(/Soma/);
    expect(knownReplies[3]).toBe("Noted: Middlemarch (book). I'll remember it.");
    expect(strangerReplies[0]).toMatch(/Soma/);
  });
});
