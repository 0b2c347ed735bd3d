// `npm run bench:push`: Soma's side of speaking first, with Web Push, measured where it can be: the real
// workflow functions (reminder-deliver, brief-generate, run by @inngest/test as Inngest would once it
// wakes them), the real repositories on Postgres as the Worker's login role under row-level security,
// and a strict push-service stand-in over https (tests/node/push-service.ts: VAPID checked, aes128gcm
// decrypted as a browser would). Inngest's own scheduling delay is not in these numbers.
//   reminder: from the moment a due reminder's run wakes to the push service accepting the push
//             (claim, channel choice, the device's subscription opened, RFC 8291 encryption, the
//             POST, the row finished), BENCH_PUSH_REMINDERS of them, one at a time and 20 at once
//   fan-out:  the hourly brief fan-out's query (who is at 08:00) over those people, every tenth of whom
//             moved their brief (left out: their occurrences are delayed events of their own)
//   briefs:   BENCH_PUSH_BRIEFS people (10,000) whose briefs fall due in the same minute, each with one
//             device: the time until the push service has every brief, 50 runs at once (as Inngest's
//             concurrency would run them), then every request delivered again: no brief twice
// The embedded Postgres unless BENCH_DATABASE_URL names a server. Writes bench/results/push.json, .md (a
// server's run was kept as push-postgres.json, .md).
import { createRequire } from "node:module";
import { rootCertificates } from "node:tls";
import { InngestTestEngine } from "@inngest/test";
import { Agent, setGlobalDispatcher } from "undici";
import { OfflineModel } from "../agents/integrations/model/offline-model";
import { localEmbedder } from "../agents/integrations/model/embeddings";
import { createWorkflows } from "../agents/workflows";
import { changeRoutine } from "../agents/schedules/routines";
import { peopleAtLocalHour } from "../db/repositories/digest";
import type { WorkflowDeps } from "../agents/workflows/deps";
import { Database } from "../db/database";
import { createPerson } from "../db/repositories/auth";
import { recordSource } from "../db/repositories/memory";
import { savePushSubscription } from "../db/repositories/push-subscriptions";
import { createReminder } from "../db/repositories/reminders";
import { TokenCipher } from "../db/token-cipher";
import { setupDatabase, workerDatabaseUrl } from "../ops/db-setup";
import { startEmbeddedPostgres } from "../ops/embedded-postgres";
import { generateVapidKeys } from "../ops/push-keys";
import { loadConfig } from "../platform/config";
import { createTracer } from "../platform/telemetry/tracer";
import { startPushService } from "../tests/node/push-service";
import { markdownTable, round, summary, writeResults } from "./support";

const REMINDERS = Number(process.env.BENCH_PUSH_REMINDERS ?? 300);
const BRIEFS = Number(process.env.BENCH_PUSH_BRIEFS ?? 10_000);
const BRIEF_CONCURRENCY = 50;
const TOKEN_KEY = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

// @inngest/test keeps every spy it ever made in a module-level Set (dist/spy.js `mocks`), which a
// benchmark of tens of thousands of runs fills past the heap: emptied between runs here. Its runs still
// keep about 0.35 MB each somewhere else (measured with BENCH_PUSH_MEMORY=1), hence the larger heap
// npm run bench:push gives Node; the Worker runs each step in a request of its own and keeps nothing.
const spies = createRequire(import.meta.url)(new URL("../node_modules/@inngest/test/dist/spy.js", import.meta.url).pathname) as {
  mocks: Set<unknown>;
};

/** Runs `work` over `items`, `limit` at a time. */
async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        await work(items[next++]!);
        spies.mocks.clear();
      }
    }),
  );
}

async function main() {
  const push = await startPushService();
  setGlobalDispatcher(new Agent({ connect: { ca: [...rootCertificates, push.ca] }, connections: 64 }));
  const url = process.env.BENCH_DATABASE_URL;
  const pg = url ? { url, stop: async () => {} } : await startEmbeddedPostgres();
  const worker = { role: "soma_worker", password: "bench-worker-password" };
  await setupDatabase(pg.url, () => {}, { worker });
  const db = new Database(workerDatabaseUrl(pg.url, worker), { max: 8 });
  const keys = await generateVapidKeys();
  const config = loadConfig({
    ENVIRONMENT: "test",
    AI_PROVIDER: "offline",
    EMBEDDING_PROVIDER: "local",
    TOKEN_ENCRYPTION_KEY: TOKEN_KEY,
    VAPID_PUBLIC_KEY: keys.publicKey,
    VAPID_PRIVATE_KEY: keys.privateKey,
  });
  const deps: WorkflowDeps = {
    config,
    db,
    embedder: localEmbedder,
    model: new OfflineModel(),
    tracer: createTracer(config),
    telegram: null,
    now: () => new Date(),
  };
  const { functions } = createWorkflows(deps);
  const cipher = new TokenCipher(TOKEN_KEY);

  /** A person with one device, and the stand-in's id for it. */
  const person = async (label: string) => {
    const { id } = await createPerson(db, { displayName: label });
    const device = push.device();
    await db.withUser(id, (tx) => savePushSubscription(tx, id, device, "Bench browser", cipher, 20));
    return { userId: id, deviceId: device.id };
  };
  const arrived = (deviceId: string) => push.messages.some((m) => m.device === deviceId);

  // ---- reminders: wake → accepted ----
  const reminderRun = async (at: Date, userId: string, deviceId: string) => {
    const eventId = await db.withUser(userId, async (tx) => {
      const sourceId = await recordSource(tx, userId, { kind: "web", externalId: crypto.randomUUID(), payload: { text: "bench" } });
      return createReminder(tx, userId, { text: "stand up and stretch", at, sourceId });
    });
    const started = performance.now();
    const { result } = await new InngestTestEngine({ function: functions.reminderDeliver }).execute({
      events: [{ name: "schedule/reminder.created", id: `reminder-${eventId}`, data: { userId, eventId, at: at.toISOString() } }],
      steps: [{ id: "wait-until-due", handler: () => null }],
    });
    if (!arrived(deviceId) || (result as { delivered?: boolean }).delivered !== true) throw new Error("a reminder was not pushed");
    return performance.now() - started;
  };
  const people = await Promise.all(Array.from({ length: 20 }, (_, i) => person(`bench-reminder-${i}`)));
  for (let i = 0; i < 10; i++) await reminderRun(new Date(), people[0]!.userId, people[0]!.deviceId); // warm-up
  push.messages.length = 0;
  const sequential: number[] = [];
  for (let i = 0; i < REMINDERS; i++) {
    const p = people[i % people.length]!;
    sequential.push(await reminderRun(new Date(), p.userId, p.deviceId));
  }
  const concurrent: number[] = [];
  await pool(
    Array.from({ length: REMINDERS }, (_, i) => people[i % people.length]!),
    20,
    async (p) => void concurrent.push(await reminderRun(new Date(), p.userId, p.deviceId)),
  );

  // ---- 10,000 briefs due in the same minute ----
  const briefPeople: Array<{ userId: string; deviceId: string }> = [];
  await pool(
    Array.from({ length: BRIEFS }, (_, i) => i),
    16,
    async (i) => {
      const p = await person(`bench-brief-${i}`);
      // Something coming up today, so there is a brief to send.
      await db.withUser(p.userId, (tx) =>
        createReminder(tx, p.userId, { text: "dentist at noon", at: new Date(Date.now() + 3_600_000), sourceId: null }),
      );
      briefPeople.push(p);
    },
  );
  if (process.env.BENCH_PUSH_MEMORY) console.log("heap after people", Math.round(process.memoryUsage().heapUsed / 1e6), "MB");

  // ---- the hourly brief fan-out: who is due at 08:00, one query over everyone reachable ----
  // Every tenth person moved their brief (their own chain of delayed events): the fan-out leaves them out.
  await pool(
    briefPeople.filter((_, i) => i % 10 === 0),
    16,
    async (p) => void (await changeRoutine(db, p.userId, "brief", { time: "07:15" }, new Date())),
  );
  const eight = new Date(`${new Date().toISOString().slice(0, 10)}T08:00:00Z`);
  const fanOut: number[] = [];
  let fannedOut = 0;
  for (let i = 0; i < 25; i++) {
    const started = performance.now();
    fannedOut = (await db.withSystem((tx) => peopleAtLocalHour(tx, "brief", 8, eight))).length;
    if (i >= 5) fanOut.push(performance.now() - started);
  }
  push.messages.length = 0;
  const date = new Date().toISOString().slice(0, 10);
  const briefRun = (p: { userId: string }) =>
    new InngestTestEngine({ function: functions.briefGenerate }).execute({
      events: [{ name: "brief/requested", id: `brief-${p.userId}-${date}`, data: { userId: p.userId, date } }],
    });
  const briefStart = performance.now();
  await pool(briefPeople, BRIEF_CONCURRENCY, async (p) => void (await briefRun(p)));
  const briefMs = performance.now() - briefStart;
  const firstRound = push.messages.length;
  if (process.env.BENCH_PUSH_MEMORY) console.log("heap after briefs", Math.round(process.memoryUsage().heapUsed / 1e6), "MB");
  // Every request delivered again (a redelivered fan-out): nothing goes out twice.
  await pool(briefPeople, BRIEF_CONCURRENCY, async (p) => void (await briefRun(p)));
  const perDevice = new Map<string, number>();
  for (const m of push.messages) perDevice.set(m.device, (perDevice.get(m.device) ?? 0) + 1);
  const duplicates = [...perDevice.values()].filter((n) => n > 1).length;
  const missing = briefPeople.filter((p) => !perDevice.has(p.deviceId)).length;

  const server = url ? "PostgreSQL server (BENCH_DATABASE_URL)" : "embedded Postgres (PGlite)";
  const rows: Array<Array<string | number>> = [
    [
      "reminder: wake → push accepted, one at a time",
      sequential.length,
      summary(sequential).p50,
      summary(sequential).p95,
      summary(sequential).p99,
    ],
    [
      `hourly brief fan-out: who is at 08:00 among ${BRIEFS + people.length} reachable people (${fannedOut} found; every tenth moved theirs)`,
      fanOut.length,
      summary(fanOut).p50,
      summary(fanOut).p95,
      summary(fanOut).p99,
    ],
    [
      "reminder: wake → push accepted, 20 at once",
      concurrent.length,
      summary(concurrent).p50,
      summary(concurrent).p95,
      summary(concurrent).p99,
    ],
  ];
  const table = [
    markdownTable(["what", "n", "p50 ms", "p95 ms", "p99 ms"], rows),
    "",
    markdownTable(
      [
        "briefs due in one minute",
        "people",
        "delivered",
        "seconds until all",
        "per second",
        "after every request again: duplicates",
        "missing",
      ],
      [
        [
          `${BRIEF_CONCURRENCY} at once`,
          BRIEFS,
          firstRound,
          round(briefMs / 1000),
          round(firstRound / (briefMs / 1000)),
          duplicates,
          missing,
        ],
      ],
    ),
    "",
    `Postgres: ${server}. Refused by the push service: ${push.refused.length}.`,
  ].join("\n");
  writeResults("push", "Web Push: reminders and briefs (npm run bench:push)", table, {
    server,
    reminders: { sequential: summary(sequential), concurrent: summary(concurrent) },
    fanOut: { people: BRIEFS + people.length, found: fannedOut, ...summary(fanOut) },
    briefs: { people: BRIEFS, concurrency: BRIEF_CONCURRENCY, delivered: firstRound, seconds: round(briefMs / 1000), duplicates, missing },
    refused: push.refused.length,
  });
  await db.close();
  await push.stop();
  await pg.stop();
}

await main();
