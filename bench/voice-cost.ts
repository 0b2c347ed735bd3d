// `npm run bench:voice` — issue 25, finding 5: what one voice note that lies about its length costs the
// running service. A note's `duration` is what the sender's Telegram client says; its size is Telegram's
// (the update's file_size). Soma as `npm start` runs it (wrangler dev, workerd, the embedded Postgres)
// with an OpenAI-style speech server, behind a tap in this process that
//   - passes the Bot API and its file server through to the stand-ins, counting the bytes of each file
//     downloaded, and
//   - plays a speech server that cannot finish hours of audio: it takes each transcription (counting it
//     and its bytes) and never answers, until Soma gives up on it (the transcription deadline, 60 s).
// Two notes, each saying it lasts 5 s, in two chats at once:
//   20 MB   Telegram's largest download for a bot: hours of Opus at 8 kbit/s (≈ 5.8 h);
//   6 MB    just under the voice cap for VOICE_MAX_SECONDS=600 (agents/telegram-message.ts, if present):
//           the most a liar can still have downloaded and transcribed (≈ 1.7 h at 8 kbit/s).
// For each: getFile calls (one per attempt that downloaded), bytes downloaded, transcription calls and
// the seconds Soma held them, the time to the person's final answer and what it said. The retry window
// is shortened (BENCH_VOICE_WINDOW_S, default 180 s) so a note that is retried ends in minutes; what the
// default window (INBOX_RETRY_WINDOW_SECONDS, 30 min) would cost is projected from the measured attempt
// time and the inbox's own backoff (agents/inbox-policy.ts retryDelayMs), and the projection is checked
// against the measured window.
// BENCH_VOICE_NAME names the result (bench/results/<name>.json and .md; default "voice-cost"): the
// "before" numbers were measured by running this file in a worktree of the commit before the fix.
import { execFileSync } from "node:child_process";
import { createServer, request as httpRequest, type ServerResponse } from "node:http";
import { retryDelayMs } from "../agents/inbox-policy";
import { markdownTable, round, startBench, writeResults } from "./support";

const NAME = process.env.BENCH_VOICE_NAME ?? "voice-cost";
const WINDOW_S = Number(process.env.BENCH_VOICE_WINDOW_S ?? 180);
const DEFAULT_WINDOW_S = 30 * 60;
const MB = 1024 * 1024;
const NOTES = [
  { label: "20 MB, says 5 s", bytes: 20 * MB },
  { label: "6 MB, says 5 s", bytes: 6_000_000 },
];
/** Seconds of speech a note's bytes hold at Opus's lowest useful voice bitrate (8 kbit/s). */
const hoursAt8kbps = (bytes: number) => round((bytes * 8) / 8000 / 3600, 1);

interface Cost {
  bytesDownloaded: number;
  transcriptions: number;
  transcriptionBytes: number;
  transcriptionSeconds: number;
}

/** The tap: the Bot API and its files passed through (bytes counted by file), and a speech server that never finishes. */
async function startTap() {
  let upstream = "";
  const costs = new Map<string, Cost>();
  const held = new Set<ServerResponse>();
  const costOf = (fileId: string) => {
    const cost = costs.get(fileId) ?? { bytesDownloaded: 0, transcriptions: 0, transcriptionBytes: 0, transcriptionSeconds: 0 };
    costs.set(fileId, cost);
    return cost;
  };
  const server = createServer((req, res) => {
    const path = req.url ?? "/";
    if (req.method === "POST" && path === "/v1/audio/transcriptions") {
      const started = performance.now();
      let head = "";
      let bytes = 0;
      req.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        if (head.length < 4096) head += chunk.toString("latin1");
      });
      req.on("end", () => {
        const cost = costOf(/SPEECH: (voice-bench-[\w-]+)/.exec(head)?.[1] ?? "unknown");
        cost.transcriptions++;
        cost.transcriptionBytes += bytes;
        held.add(res);
        // Never answered: held until Soma gives up on it.
        res.on("close", () => {
          held.delete(res);
          cost.transcriptionSeconds += (performance.now() - started) / 1000;
        });
      });
      return;
    }
    const file = /^\/file\/bot[^/]+\/files\/(.+)$/.exec(path)?.[1];
    const forward = httpRequest(`${upstream}${path}`, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      if (file) {
        const cost = costOf(decodeURIComponent(file));
        answer.on("data", (chunk: Buffer) => {
          cost.bytesDownloaded += chunk.length;
        });
      }
      answer.pipe(res);
    });
    forward.on("error", () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return {
    url: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`,
    forwardTo(url: string) {
      upstream = url;
    },
    costOf,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const res of held) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Attempts the inbox makes on a note whose every attempt fails as an outage after `attemptS`, within `windowS`. */
function projectedAttempts(attemptS: number, windowS: number): number {
  let at = 0;
  let firstFailedAt: number | null = null;
  for (let attempts = 1; ; attempts++) {
    at += attemptS;
    firstFailedAt ??= at;
    if (at - firstFailedAt >= windowS) return attempts;
    at += retryDelayMs(attempts) / 1000;
  }
}

async function main() {
  const tap = await startTap();
  const bench = await startBench({
    WRANGLER_LOG: "error",
    INBOX_RETRY_WINDOW_SECONDS: String(WINDOW_S),
    TELEGRAM_API_ROOT: tap.url,
    AI_BASE_URL: `${tap.url}/v1`,
  });
  tap.forwardTo(bench.standIns.url);
  let update = 800_000_000 + Math.floor(Math.random() * 1e8);
  const postUpdate = async (chatId: number, message: Record<string, unknown>) => {
    const response = await fetch(`${bench.app.url}/api/messenger/webhook`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": bench.secret },
      body: JSON.stringify({
        update_id: ++update,
        message: {
          message_id: update % 1_000_000,
          date: Math.floor(Date.now() / 1000),
          chat: { id: chatId, type: "private" },
          from: { id: chatId, is_bot: false, first_name: "Bench" },
          ...message,
        },
      }),
    });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`webhook answered ${response.status}`);
  };
  const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  try {
    const results = await Promise.all(
      NOTES.map(async (note, index) => {
        const chatId = 730_000_000 + Math.floor(Math.random() * 1e6) * 10 + index;
        const fileId = `voice-bench-${crypto.randomUUID()}`;
        const bytes = Buffer.alloc(note.bytes, "a");
        bytes.write(`SPEECH: ${fileId} `);
        await fetch(`${bench.standIns.url}/__files`, {
          method: "POST",
          body: JSON.stringify({ fileId, base64: bytes.toString("base64") }),
        }).then((r) => r.arrayBuffer());
        await postUpdate(chatId, { text: "/start" });
        await waitFor(async () => (await bench.replies(chatId)).length >= 1, 60_000, "the welcome");
        const sentAt = performance.now();
        await postUpdate(chatId, {
          voice: { file_id: fileId, file_unique_id: `u-${fileId}`, duration: 5, mime_type: "audio/ogg", file_size: note.bytes },
        });
        // The final answer: the first reply after the welcome that is not the outage notice.
        const notice = "I'm having trouble reaching my memory";
        const final = await waitFor(
          async () => (await bench.replies(chatId)).slice(1).find((r) => !r.text.startsWith(notice)),
          (WINDOW_S + 300) * 1000,
          "the final answer",
        );
        // Nothing more after it: a few seconds for a retry that should not come.
        await new Promise((resolve) => setTimeout(resolve, 5000));
        const replies = (await bench.replies(chatId)).slice(1).map((r) => r.text);
        const getFiles = (
          (await (await fetch(`${bench.standIns.url}/__calls?method=getFile`)).json()) as Array<{ payload: { file_id?: string } }>
        ).filter((c) => c.payload.file_id === fileId).length;
        const cost = tap.costOf(fileId);
        const attempts = Math.max(getFiles, cost.transcriptions);
        const attemptS = attempts > 0 ? (final.hr - sentAt) / 1000 / attempts : 0;
        const projected = attempts > 1 ? projectedAttempts(attemptS, DEFAULT_WINDOW_S) : attempts;
        const result = {
          note: note.label,
          noteBytes: note.bytes,
          hoursOfSpeechAt8kbps: hoursAt8kbps(note.bytes),
          getFileCalls: getFiles,
          megabytesDownloaded: round(cost.bytesDownloaded / MB, 1),
          transcriptions: cost.transcriptions,
          transcriptionMegabytes: round(cost.transcriptionBytes / MB, 1),
          transcriptionSeconds: round(cost.transcriptionSeconds, 1),
          secondsToFinalAnswer: round((final.hr - sentAt) / 1000, 1),
          finalAnswer: final.text,
          replies,
          projectionCheck: {
            windowSeconds: WINDOW_S,
            measuredAttempts: attempts,
            projectedAttempts: attempts > 1 ? projectedAttempts(attemptS, WINDOW_S) : attempts,
          },
          atDefaultWindow: {
            windowSeconds: DEFAULT_WINDOW_S,
            attempts: projected,
            megabytesDownloaded: round((projected * cost.bytesDownloaded) / Math.max(1, attempts) / MB, 0),
            transcriptionMinutes: round((projected * cost.transcriptionSeconds) / Math.max(1, attempts) / 60, 1),
            minutesToFinalAnswer: round((projected * attemptS) / 60, 1),
          },
        };
        console.log(JSON.stringify(result));
        return result;
      }),
    );
    const table = markdownTable(
      [
        "note (says 5 s)",
        "getFile",
        "MB downloaded",
        "transcriptions",
        "s transcribing",
        "s to final answer",
        `at the default ${DEFAULT_WINDOW_S / 60}-min window: attempts · MB · min transcribing`,
        "final answer",
      ],
      results.map((r) => [
        `${r.note} (≈ ${r.hoursOfSpeechAt8kbps} h at 8 kbit/s)`,
        r.getFileCalls,
        r.megabytesDownloaded,
        r.transcriptions,
        r.transcriptionSeconds,
        r.secondsToFinalAnswer,
        `${r.atDefaultWindow.attempts} · ${r.atDefaultWindow.megabytesDownloaded} · ${r.atDefaultWindow.transcriptionMinutes}`,
        `${r.finalAnswer.slice(0, 60)}…`,
      ]),
    );
    writeResults(NAME, `Voice notes that lie about their length (${commit}, retry window ${WINDOW_S} s)`, table, {
      commit,
      retryWindowSeconds: WINDOW_S,
      results,
    });
  } finally {
    await bench.stop();
    await tap.stop();
  }
  process.exit(0);
}

async function waitFor<T>(check: () => Promise<T | undefined | false>, timeoutMs: number, what: string): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (performance.now() > deadline) throw new Error(`no ${what} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
