// Issue 20: a Telegram reply grows in a draft while the model writes it — the first words at once, then
// at most a frame a second, a status while a tool runs, never two Bot API calls at once — and where
// Telegram refuses drafts, "typing…" instead. Fake timers (Date included): the frames' timing is exact.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { DraftOutcome } from "../../agents/integrations/telegram-sender";
import { DraftStream } from "../../agents/telegram-draft";

/** Lets `ms` of fake time pass, running every timer and promise due meanwhile. */
const sleep = (ms: number) => vi.advanceTimersByTimeAsync(ms);
/** A Bot API call that takes `ms` (of fake time). */
const slow = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

function host(answer: (text: string) => Promise<DraftOutcome> = async () => "shown") {
  const frames: string[] = [];
  let typing = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  return {
    frames,
    get typing() {
      return typing;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    host: {
      draft: async (text: string) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        frames.push(text);
        try {
          return await answer(text);
        } finally {
          inFlight--;
        }
      },
      typing: () => void typing++,
    },
  };
}

const delta = (text: string) => ({ type: "text-delta" as const, id: "t", delta: text });

describe("DraftStream", () => {
  it("shows the first words at once, then the text so far at most once an interval", async () => {
    const h = host();
    const stream = new DraftStream(h.host, 100);
    stream.push(delta("You "));
    await sleep(20);
    expect(h.frames).toEqual(["You"]);
    for (const word of ["read ", "**Dune** ", "and ", "Emma."]) stream.push(delta(word));
    await sleep(60);
    expect(h.frames).toHaveLength(1);
    await sleep(80);
    expect(h.frames).toEqual(["You", "You read **Dune** and Emma."]);
    stream.close();
  });

  it("shows a short status while a tool runs, and drops it when the text goes on", async () => {
    const h = host();
    const stream = new DraftStream(h.host, 30);
    stream.push({ type: "tool-input-start", toolCallId: "c1", toolName: "memory_recall" });
    await sleep(50);
    stream.push(delta("You read Dune."));
    await sleep(50);
    expect(h.frames).toEqual(["_Looking through your memories…_", "You read Dune."]);
    stream.close();
  });

  it("never sends two frames at once: text that arrives meanwhile goes in the next", async () => {
    const h = host(() => slow(80).then(() => "shown" as const));
    const stream = new DraftStream(h.host, 10);
    stream.push(delta("a"));
    await sleep(20);
    stream.push(delta("b"));
    stream.push(delta("c"));
    await sleep(150);
    await stream.settled();
    expect(h.maxInFlight).toBe(1);
    expect(h.frames).toEqual(["a", "abc"]);
    stream.close();
  });

  it("falls back to typing where Telegram refuses drafts, and sends no more drafts", async () => {
    const h = host(async () => "unsupported");
    const stream = new DraftStream(h.host, 10);
    stream.push(delta("Hello"));
    await sleep(30);
    stream.push(delta(" there"));
    await sleep(30);
    expect(h.frames).toEqual(["Hello"]);
    expect(h.typing).toBe(1);
    stream.close();
  });

  it("sends nothing after close", async () => {
    const h = host();
    const stream = new DraftStream(h.host, 50);
    stream.push(delta("one"));
    await sleep(10);
    stream.push(delta(" two"));
    stream.close();
    await sleep(80);
    expect(h.frames).toEqual(["one"]);
  });
});
