// `npm run bench:recovery` — how long a person waits when things break (issue: nothing lost, nothing
// stuck). `npm start` runs as separate processes (tests/node/service-process.ts) against the loopback stand-ins
// (Bot API and a chat-completions model, in this process):
//   crash → every pending message answered
//       PEOPLE people write MESSAGES each while the model hangs (turns in flight, the rest stored,
//       watchdog alarms pending); every process of npm start gets SIGKILL; npm start again over the
//       same state: from that second start to health, and to the last pending message answered
//   database back → pending turn answered
//       a turn hits Postgres stopped mid-turn (memory_capture fails), the outage lasts OUTAGE_S; from
//       the database accepting connections again to that message's one answer
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { startEmbeddedPostgres } from "../ops/embedded-postgres";
import { startStandIns } from "../tests/setup/stand-ins";
import { freePort } from "../tests/node/helpers";
import { WEBHOOK_SECRET, killEverything, launch, stopAll } from "../tests/node/service-process";
import { hang, sent, startTap, webhook } from "../tests/node/service-http";
import { waitFor } from "../tests/node/wait";
import { markdownTable, round, summary, writeResults } from "./support";

const ROUNDS = Number(process.env.BENCH_RECOVERY_ROUNDS ?? 3);
const PEOPLE = Number(process.env.BENCH_RECOVERY_PEOPLE ?? 10);
const MESSAGES = 3;
const OUTAGE_S = 20;

async function main() {
  const standIns = await startStandIns();
  const tap = await startTap(standIns.url);
  let update = 500_000_000 + Math.floor(Math.random() * 1e8);
  const crash = { health: [] as number[], answered: [] as number[] };
  const recovery: number[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const stateDir = mkdtempSync(`${tmpdir()}/soma-bench-recovery-`);
      const port = await freePort();
      let service = await launch({ stateDir, port, standIn: tap.url });
      const people = Array.from({ length: PEOPLE }, (_, i) => 700_000_000 + round * 1000 + i);
      for (const chat of people) await webhook(service.url, WEBHOOK_SECRET, chat, ++update, "/start");
      await waitFor(
        async () => (await Promise.all(people.map((c) => sent(standIns.url, c)))).every((t) => t.length >= 1) || undefined,
        60_000,
        "the welcomes",
      );
      const release = await hang(standIns.url, "chat");
      for (let m = 0; m < MESSAGES; m++) {
        await Promise.all(people.map((chat) => webhook(service.url, WEBHOOK_SECRET, chat, ++update, `I read Crash ${round}-${chat}-${m}`)));
      }
      await waitFor(() => tap.modelRequests(`Crash ${round}-`).length >= PEOPLE || undefined, 30_000, "a turn in flight for everyone");
      await killEverything(service);
      await release();
      const restarted = Date.now();
      service = await launch({ stateDir, port, standIn: tap.url });
      crash.health.push(service.readyAt - restarted);
      await waitFor(
        async () =>
          (await Promise.all(people.map((c) => sent(standIns.url, c)))).every((texts) => texts.length >= 1 + MESSAGES) || undefined,
        120_000,
        "every pending message answered",
        50,
      );
      crash.answered.push(Date.now() - restarted);
      await stopAll();

      // The database goes away while a turn is running, and comes back after OUTAGE_S.
      const dataDir = mkdtempSync(`${tmpdir()}/soma-bench-recovery-db-`);
      let database = await startEmbeddedPostgres({ dataDir });
      service = await launch({
        stateDir: mkdtempSync(`${tmpdir()}/soma-bench-recovery-`),
        port: await freePort(),
        standIn: tap.url,
        env: { DATABASE_URL: database.url },
      });
      const chat = 710_000_000 + round;
      await webhook(service.url, WEBHOOK_SECRET, chat, ++update, "/start");
      await waitFor(async () => (await sent(standIns.url, chat)).length >= 1 || undefined, 30_000, "the welcome");
      const hold = await hang(standIns.url, "chat");
      await webhook(service.url, WEBHOOK_SECRET, chat, ++update, `I just finished reading Outage ${round}`);
      await waitFor(() => tap.modelRequests(`Outage ${round}`).length >= 1 || undefined, 30_000, "the turn in flight");
      await database.stop();
      await hold();
      await new Promise((resolve) => setTimeout(resolve, OUTAGE_S * 1000));
      const before = (await sent(standIns.url, chat)).length;
      database = await startEmbeddedPostgres({ dataDir, port: database.port });
      const back = Date.now();
      await waitFor(
        async () => (await sent(standIns.url, chat)).slice(before).some((t) => t.startsWith("Done.")) || undefined,
        120_000,
        "the answer",
        50,
      );
      recovery.push(Date.now() - back);
      await stopAll();
      await database.stop();
      console.log(
        `round ${round + 1}/${ROUNDS}: crash → all answered ${crash.answered.at(-1)} ms, database back → answered ${recovery.at(-1)} ms`,
      );
    }
  } finally {
    await stopAll().catch(() => {});
    await tap.stop();
    await standIns.stop();
  }
  const row = (label: string, values: number[]) => {
    const s = summary(values);
    return [label, s.n, round(s.p50 / 1000, 2), round(s.max / 1000, 2)];
  };
  const table = markdownTable(
    ["measure (s)", "n", "p50", "max"],
    [
      row(`SIGKILL of npm start → npm start answering health`, crash.health),
      row(`SIGKILL → all ${PEOPLE * MESSAGES} pending messages of ${PEOPLE} people answered (from the second start)`, crash.answered),
      row(`Postgres back after ${OUTAGE_S} s down mid-turn → that turn answered`, recovery),
    ],
  );
  writeResults("recovery", "Recovery: crash and database outage", table, {
    people: PEOPLE,
    messages: MESSAGES,
    outageSeconds: OUTAGE_S,
    crash,
    recovery,
  });
  process.exit(0);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
