// `npm run bench:load` — benchmark 3: sustained load like Telegram's maximum: 100 connections posting
// updates for 60 s (BENCH_SECONDS) across 200 people, against npm start with the instant model. Every
// update must be answered exactly once (replies are counted per chat at the Bot API stand-in after
// the queues drain), no 5xx, p99 acknowledgement < 250 ms; reports updates/s. The per-person
// Telegram limit is raised for the run (TELEGRAM_MESSAGES_PER_MINUTE), since the point is the
// system's capacity, not one person's allowance.
import { markdownTable, percentile, round, startBench, summary, waitForReplies, writeResults } from "./support";

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 100);
const PEOPLE = Number(process.env.BENCH_PEOPLE ?? 200);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);

async function main() {
  const bench = await startBench({ TELEGRAM_MESSAGES_PER_MINUTE: "1000000" });
  try {
    const base = 800_000_000 + Math.floor(Math.random() * 1e6);
    const people = Array.from({ length: PEOPLE }, (_, i) => base + i);
    let update = 5_000_000;
    // Everyone says hello first (creates the people and their agents; not measured).
    for (let i = 0; i < people.length; i += 20) {
      await Promise.all(people.slice(i, i + 20).map((chat) => bench.post(chat, ++update, "/start")));
    }
    await Promise.all(people.map((chat) => waitForReplies(bench, chat, 1, 60_000)));

    const sent = new Map<number, number>(people.map((p) => [p, 1]));
    const acks: number[] = [];
    const statuses = new Map<number, number>();
    let next = 0;
    const started = performance.now();
    const deadline = started + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (performance.now() < deadline) {
          const chat = people[next++ % PEOPLE]!;
          const { status, ackMs } = await bench.post(chat, ++update, `hello ${update}`).catch(() => ({ status: 0, ackMs: NaN }));
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          if (status === 200) {
            acks.push(ackMs);
            sent.set(chat, sent.get(chat)! + 1);
          }
        }
      }),
    );
    const elapsed = (performance.now() - started) / 1000;

    // Drain: wait until every chat has exactly as many replies as accepted updates, then check none got more.
    const drainStarted = performance.now();
    let lost = 0;
    for (const chat of people) {
      try {
        await waitForReplies(bench, chat, sent.get(chat)!, 180_000);
      } catch {
        lost += sent.get(chat)! - (await bench.replies(chat)).length;
      }
    }
    const drainSeconds = (performance.now() - drainStarted) / 1000;
    await new Promise((resolve) => setTimeout(resolve, 2000));
    let duplicated = 0;
    for (const chat of people) duplicated += Math.max(0, (await bench.replies(chat)).length - sent.get(chat)!);

    const accepted = acks.length;
    const fiveXX = [...statuses].filter(([s]) => s >= 500).reduce((n, [, c]) => n + c, 0);
    const failed = statuses.get(0) ?? 0;
    const ack = summary(acks);
    const result = {
      connections: CONNECTIONS,
      people: PEOPLE,
      seconds: round(elapsed),
      accepted,
      updatesPerSecond: round(accepted / elapsed),
      statuses: Object.fromEntries(statuses),
      fiveXX,
      connectionErrors: failed,
      lost,
      duplicated,
      drainSeconds: round(drainSeconds),
      ack,
      p99Target: 250,
      met: fiveXX === 0 && failed === 0 && lost === 0 && duplicated === 0 && percentile(acks, 99) < 250,
    };
    const table = markdownTable(
      [
        "connections",
        "people",
        "seconds",
        "updates accepted",
        "updates/s",
        "5xx",
        "lost",
        "duplicated",
        "ack p50 (ms)",
        "ack p95",
        "ack p99",
        "drain (s)",
        "target",
      ],
      [
        [
          CONNECTIONS,
          PEOPLE,
          result.seconds,
          accepted,
          result.updatesPerSecond,
          fiveXX,
          lost,
          duplicated,
          ack.p50,
          ack.p95,
          ack.p99,
          result.drainSeconds,
          result.met ? "met" : "MISSED",
        ],
      ],
    );
    writeResults("load", "Sustained load: 100 connections across 200 people", table, { result });
  } finally {
    await bench.stop();
  }
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
