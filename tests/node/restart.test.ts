// `npm start` stopped with messages in flight and started again over the same state directory, as
// separate processes: every process killed at once (kill -9 of the whole tree: power cut, OOM), and
// Ctrl-C. What a person sees afterwards: each message answered exactly once (at most one outage
// notice in all, never the apology), the next message answered as usual, the webhook never 5xx.
import { describe, expect, inject, it } from "vitest";
import { APOLOGY, OUTAGE_NOTICE } from "../../agents/inbox-policy";
import { WELCOME } from "../../agents/commands/index";
import { freePort } from "./helpers";
import { WEBHOOK_SECRET, interrupt, killEverything, launch, tempDir, wranglerProcess, type Service } from "./service-process";
import { hang, health, randomChatId, sent, subjectOf, webhook } from "./service-http";
import { sleep, waitFor } from "./wait";
import { registerServiceHooks } from "./service-hooks";

const standIn = inject("standInUrl");
const services = registerServiceHooks(standIn);

let updateId = 100_000_000 + Math.floor(Math.random() * 1e8);
/** Every webhook status a test saw: none may be 5xx. */
let statuses: Array<{ chatId: number; text: string; status: number }> = [];
async function post(service: Service, chatId: number, text: string): Promise<number> {
  const status = await webhook(service.url, WEBHOOK_SECRET, chatId, ++updateId, text);
  statuses.push({ chatId, text, status });
  return status;
}

const BOOKS = ["Dune", "Emma", "Ulysses"] as const;

/**
 * One person's three messages are stored and the first one's turn is waiting on the model when the
 * service goes down (`stop`); the model answers again only once it is down. npm start again, same
 * state directory and port.
 */
async function messagesInFlightAcross(stop: (service: Service) => Promise<unknown>, label: string): Promise<void> {
  statuses = [];
  const stateDir = tempDir("soma-restart-");
  const port = await freePort();
  const chatId = randomChatId();
  let service = await launch({ stateDir, port, standIn: services.tap().url });

  expect(await post(service, chatId, "/start")).toBe(200);
  await waitFor(async () => (await sent(standIn, chatId)).length >= 1, 20_000, "the welcome");
  expect(await sent(standIn, chatId)).toEqual([WELCOME]);

  const release = await hang(standIn, "chat");
  const hungAt = Date.now();
  for (const book of BOOKS) expect(await post(service, chatId, `I read ${book}`)).toBe(200);
  // A turn is in flight (its model request is held at the stand-in) and the inbox holds the rest.
  await waitFor(
    () => BOOKS.some((book) => services.tap().modelRequests(`I read ${book}`, hungAt).length > 0),
    30_000,
    "a turn to reach the model",
  );
  const inFlight = BOOKS.filter((book) => services.tap().modelRequests(`I read ${book}`, hungAt).length > 0);
  const stopped = await stop(service);
  await release();
  expect(await sent(standIn, chatId)).toEqual([WELCOME]);

  const relaunchedAt = Date.now();
  service = await launch({ stateDir, port, standIn: services.tap().url });
  const replies = async () => (await sent(standIn, chatId)).slice(1);
  await waitFor(
    async () => {
      const texts = await replies();
      return BOOKS.every((book) => texts.some((text) => subjectOf(text, services.tap(), BOOKS) === book));
    },
    60_000,
    "a reply to each of the three messages after npm start again",
  ).catch(async (error: Error) => {
    throw new Error(`${error.message}; texts so far: ${JSON.stringify(await replies())}`);
  });
  console.log(
    JSON.stringify({
      measure: "restart-recovery",
      stop: label,
      turns_in_flight_at_stop: inFlight,
      ...(stopped && typeof stopped === "object" ? { stop_result: stopped } : {}),
      launch_to_health_ms: service.readyAt - relaunchedAt,
      launch_to_all_answered_ms: Date.now() - relaunchedAt,
    }),
  );

  // The person writes again: acknowledged (never 5xx) and answered once.
  expect(await post(service, chatId, "I read Middlemarch")).toBe(200);
  await waitFor(
    async () => (await replies()).some((text) => subjectOf(text, services.tap(), ["Middlemarch"]) === "Middlemarch"),
    30_000,
    "the reply to Middlemarch",
  );
  await sleep(3000); // a second copy of any reply would arrive by now

  const texts = await replies();
  console.log(
    JSON.stringify({ stop: label, replies: texts.map((text) => subjectOf(text, services.tap(), [...BOOKS, "Middlemarch"]) ?? text) }),
  );
  expect(
    texts.filter((text) => text === APOLOGY),
    "no apology",
  ).toEqual([]);
  expect(texts.filter((text) => text === OUTAGE_NOTICE).length, "at most one outage notice in all").toBeLessThanOrEqual(1);
  // Exactly one reply per message, and nothing else (unknown texts show up verbatim).
  const subjects = texts
    .filter((text) => text !== OUTAGE_NOTICE)
    .map((text) => subjectOf(text, services.tap(), [...BOOKS, "Middlemarch"]) ?? text);
  expect([...subjects].sort()).toEqual([...BOOKS, "Middlemarch"].sort());
  expect(subjects.at(-1)).toBe("Middlemarch");
  expect(
    statuses.filter((s) => s.status >= 500),
    "webhook 5xx",
  ).toEqual([]);
  expect(await health(service.url)).toBe(200);
}

/**
 * An import of pasted saved memories is being read (its model calls held at the stand-in) when every
 * process of npm start is killed; npm start again over the same state: the import goes on by itself
 * (the agent's local run, kept in its own storage), ends, and the person is told once.
 */
async function importAcrossKill(): Promise<void> {
  const stateDir = tempDir("soma-restart-import-");
  const port = await freePort();
  const chatId = randomChatId();
  let service = await launch({ stateDir, port, standIn: services.tap().url });
  expect(await post(service, chatId, "/start")).toBe(200);
  await waitFor(async () => (await sent(standIn, chatId)).length >= 1, 20_000, "the welcome");

  const release = await hang(standIn, "chat");
  const hungAt = Date.now();
  expect(await post(service, chatId, "/import\n- I keep bees on the roof\n- I sing in a choir")).toBe(200);
  await waitFor(() => services.tap().modelRequests("I keep bees on the roof", hungAt).length > 0, 30_000, "the import to reach the model");
  expect((await sent(standIn, chatId)).at(-1)).toBe("Importing 2 saved memories. I'll tell you when it's done.");
  await killEverything(service);
  await release();

  service = await launch({ stateDir, port, standIn: services.tap().url });
  const told = async () => (await sent(standIn, chatId)).filter((text) => text.startsWith("Imported your pasted saved memories"));
  await waitFor(async () => (await told()).length > 0, 120_000, "the import to end after npm start again").catch(async (error: Error) => {
    throw new Error(`${error.message}; texts so far: ${JSON.stringify(await sent(standIn, chatId))}`);
  });
  expect(await post(service, chatId, "/import")).toBe(200);
  await waitFor(async () => (await sent(standIn, chatId)).length >= 4, 30_000, "the answer to /import");
  await sleep(3000); // a second notice would arrive by now
  expect(await told()).toEqual([
    "Imported your pasted saved memories: 0 memories and 0 facts added. Ask me about them, or see them with /memories.",
  ]);
  expect((await sent(standIn, chatId)).at(-1)).toContain("Send me your ChatGPT data export");
}

describe("npm start stopped with messages in flight, then started again over the same state", () => {
  it("every process killed with messages in flight: each answered exactly once after npm start again, and the next message too", async () => {
    await messagesInFlightAcross(killEverything, "kill -9 of every process");
  }, 200_000);

  it("Ctrl-C with messages in flight: each answered exactly once after npm start again, and the next message too", async () => {
    // interrupt() fails the test if any process of npm start survives Ctrl-C.
    await messagesInFlightAcross(interrupt, "Ctrl-C");
  }, 200_000);

  it("every process killed while an import is being read: it goes on by itself after npm start again, and ends once", async () => {
    await importAcrossKill();
  }, 300_000);

  it("many agents with pending alarms woken at once do not bring the dev server down", async () => {
    statuses = [];
    const stateDir = tempDir("soma-restart-many-");
    const port = await freePort();
    let service = await launch({ stateDir, port, standIn: services.tap().url });
    const first = randomChatId();
    const people = Array.from({ length: 30 }, (_, i) => ({
      chatId: first + i * 7,
      book: `Opus ${i}-${Math.random().toString(36).slice(2, 7)}`,
    }));

    const release = await hang(standIn, "chat");
    const hungAt = Date.now();
    // Five at a time: thirty first contacts at once would mostly measure two cores.
    for (let i = 0; i < people.length; i += 5) {
      const batch = people.slice(i, i + 5);
      const results = await Promise.all(batch.map((p) => post(service, p.chatId, `I read ${p.book}`)));
      expect(results).toEqual(batch.map(() => 200));
    }
    await waitFor(
      () => people.every((p) => services.tap().modelRequests(`I read ${p.book}`, hungAt).length > 0),
      60_000,
      "every person's turn to reach the model",
    ).catch((error: Error) => {
      throw new Error(
        `${error.message}: ${people.filter((p) => services.tap().modelRequests(`I read ${p.book}`, hungAt).length > 0).length}/30 did`,
      );
    });
    await killEverything(service);
    await release();

    const relaunchedAt = Date.now();
    service = await launch({ stateDir, port, standIn: services.tap().url });
    const answered = async () => {
      const done = await Promise.all(
        people.map(async (p) => (await sent(standIn, p.chatId)).some((t) => subjectOf(t, services.tap(), [p.book]) === p.book)),
      );
      return done.filter(Boolean).length;
    };
    await waitFor(async () => (await answered()) === people.length, 90_000, "all thirty answered").catch(async (error: Error) => {
      throw new Error(`${error.message}: ${await answered()}/30 answered; wrangler ${wranglerProcess(service) ? "running" : "GONE"}`);
    });
    console.log(
      JSON.stringify({
        measure: "restart-thirty-alarms",
        launch_to_health_ms: service.readyAt - relaunchedAt,
        launch_to_all_answered_ms: Date.now() - relaunchedAt,
      }),
    );
    await sleep(3000);

    for (const p of people) {
      const texts = await sent(standIn, p.chatId);
      expect(
        texts.filter((t) => t === APOLOGY),
        `no apology for ${p.chatId}`,
      ).toEqual([]);
      expect(texts.filter((t) => t === OUTAGE_NOTICE).length, `at most one notice for ${p.chatId}`).toBeLessThanOrEqual(1);
      const subjects = texts.filter((t) => t !== OUTAGE_NOTICE).map((t) => subjectOf(t, services.tap(), [p.book]) ?? t);
      expect(subjects, `one reply for ${p.chatId}`).toEqual([p.book]);
    }
    expect(
      statuses.filter((s) => s.status >= 500),
      "webhook 5xx",
    ).toEqual([]);
    expect(wranglerProcess(service), "the wrangler process").toBeDefined();
    expect(service.child.exitCode, "npm start still running").toBeNull();
    expect(await health(service.url)).toBe(200);
  }, 240_000);
});
