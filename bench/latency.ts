// `npm run bench:latency` — benchmarks 1 and 2: Soma's own latency around a Telegram turn, with an
// instant scripted model (one memory_capture, one memory_recall, then the answer) so that everything
// measured is ours: the webhook, the agent, Postgres, the tool loop, the Bot API call.
//   added latency  webhook POST sent → sendMessage arriving at the Bot API (warm agent; cold agent =
//                  a person writing for the first time: new person, new Durable Object, the welcome)
//   acknowledgement  webhook POST sent → its 200 received
//   first words    webhook POST sent → the first draft frame (sendMessageDraft: the reply as it is
//                  written; here the tool's status line, shown while memory_capture runs)
// Targets: warm p95 ≤ 150 ms, cold p95 ≤ 300 ms, acknowledgement p95 ≤ 50 ms.
import { markdownTable, startBench, summary, waitForReplies, writeResults } from "./support";

// Every channel shares one per-person budget of 20 messages a minute (agents/rate-limit.ts, which the
// benchmark leaves as it is): 20 people keep each one's warm-up and turns (2 + 10) well inside it.
const WARM_PEOPLE = 20;
const WARM_TURNS = Number(process.env.BENCH_WARM_TURNS ?? 200);
const COLD_TURNS = Number(process.env.BENCH_COLD_TURNS ?? 50);

/** Posts like Telegram delivers: a refused update (5xx) is delivered again; refusals are counted. */
let refused = 0;
async function deliver(bench: Awaited<ReturnType<typeof startBench>>, chat: number, update: number, text: string) {
  for (let attempt = 0; ; attempt++) {
    const result = await bench.post(chat, update, text);
    if (result.status === 200) return result;
    if (result.status < 500 || attempt >= 5) throw new Error(`webhook answered ${result.status}`);
    refused++;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function main() {
  const bench = await startBench({ TELEGRAM_MESSAGES_PER_MINUTE: "100000" });
  try {
    let update = 1_000_000;
    const base = 900_000_000 + Math.floor(Math.random() * 1e6);

    // Warm the people's agents (and the Worker) first: /start, one turn each.
    const people = Array.from({ length: WARM_PEOPLE }, (_, i) => base + i);
    for (const chat of people) {
      await deliver(bench, chat, ++update, "/start");
      await deliver(bench, chat, ++update, "bench: Warm-up Book");
      await waitForReplies(bench, chat, 2);
    }

    const warm: number[] = [];
    const firstWords: number[] = [];
    const ack: number[] = [];
    const seen = new Map(people.map((p) => [p, 2]));
    for (let i = 0; i < WARM_TURNS; i++) {
      const chat = people[i % WARM_PEOPLE]!;
      const { ackMs, sentAt } = await deliver(bench, chat, ++update, `bench: Book ${i}`);
      ack.push(ackMs);
      const count = seen.get(chat)! + 1;
      seen.set(chat, count);
      const replies = await waitForReplies(bench, chat, count);
      warm.push(replies[count - 1]!.hr - sentAt);
      const drafts = (await bench.calls(chat, "sendMessageDraft")).filter((d) => d.hr >= sentAt);
      if (drafts[0]) firstWords.push(drafts[0].hr - sentAt);
    }

    const cold: number[] = [];
    for (let i = 0; i < COLD_TURNS; i++) {
      const chat = base + 10_000 + i;
      const { ackMs, sentAt } = await deliver(bench, chat, ++update, `bench: First Book ${i}`);
      ack.push(ackMs);
      const [reply] = await waitForReplies(bench, chat, 1);
      cold.push(reply!.hr - sentAt);
    }

    // The agent deliberately waits for a 100 ms quiet period before a turn (GATHER_QUIET_MS in
    // agents/user-agent.ts) so that concurrent deliveries are answered in update_id order; shown apart.
    const GATHER_MS = 100;
    const rows = [
      ["added latency, warm agent", warm, 150],
      ["  of which work (minus the 100 ms ordering window)", warm.map((v) => v - GATHER_MS), 150],
      ["first words in a draft, warm agent", firstWords, 150],
      ["added latency, cold agent (first contact)", cold, 300],
      ["webhook acknowledgement", ack, 50],
    ] as const;
    const results = rows.map(([name, values, target]) => ({
      name,
      ...summary([...values]),
      targetP95: target,
      met: summary([...values]).p95 <= target,
    }));
    const table = markdownTable(
      ["measure (ms)", "n", "p50", "p95", "p99", "max", "target p95", ""],
      results.map((r) => [r.name, r.n, r.p50, r.p95, r.p99, r.max, `≤ ${r.targetP95}`, r.met ? "met" : "MISSED"]),
    );
    const note = `\n\nRefused deliveries (5xx, delivered again as Telegram does): ${refused}.`;
    writeResults("latency", "Added latency and webhook acknowledgement (a turn with one capture and one recall)", table + note, {
      results,
      refused,
    });
  } finally {
    await bench.stop();
  }
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
