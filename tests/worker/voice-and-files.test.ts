// Issue 20: what a person sends besides text reaches Soma. Files come from Telegram's file server
// (getFile, then the bytes) within Telegram's 20 MB and Soma's own caps; speech becomes text through
// the configured transcriber — an OpenAI-style /audio/transcriptions server here (the stand-in listens
// to files that read "SPEECH: …"); the offline model has none, and says so rather than guess.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { InboxItem } from "../../agents/inbox";
import { FileTooLargeError, TelegramSender } from "../../agents/integrations/telegram-sender";
import { createTranscriber, type Transcriber } from "../../agents/integrations/model/transcription";
import { type InputDeps, telegramTurnInput } from "../../agents/telegram-input";
import { LISTENING_TIMED_OUT, readTelegramMessage, tooLongVoice } from "../../agents/telegram-message";
import { classifyFailure } from "../../platform/faults";
import { loadConfig } from "../../platform/config";
import { putTelegramFile } from "./helpers";

const sender = () => new TelegramSender(env.TELEGRAM_BOT_TOKEN, env.TELEGRAM_API_ROOT, { sleep: async () => {} });
const fileId = () => `voice-${crypto.randomUUID()}`;

describe("downloading what a person sent", () => {
  it("fetches the file's bytes through getFile", async () => {
    const id = fileId();
    await putTelegramFile(id, "SPEECH: hello");
    expect(new TextDecoder().decode(await sender().downloadFile(id))).toBe("SPEECH: hello");
  });

  it("refuses a file over the caller's cap from Telegram's word, before downloading it", async () => {
    const id = fileId();
    await putTelegramFile(id, "tiny", 5 * 1024 * 1024);
    const error = await sender()
      .downloadFile(id, 1024 * 1024)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FileTooLargeError);
    expect(classifyFailure(error)).toBe("permanent");
  });

  it("refuses a file Telegram itself will not hand a bot (over 20 MB)", async () => {
    const id = fileId();
    await putTelegramFile(id, "tiny", 21 * 1024 * 1024);
    await expect(sender().downloadFile(id)).rejects.toBeInstanceOf(FileTooLargeError);
  });

  it("refuses bytes past the cap even when getFile did not give the size (the file server's Content-Length, else the bytes)", async () => {
    const id = fileId();
    await putTelegramFile(id, "x".repeat(4096), 1);
    await expect(sender().downloadFile(id, 1000)).rejects.toMatchObject({ name: "FileTooLargeError", bytes: 4096 });
  });
});

describe("transcription", () => {
  const base = loadConfig(env);

  it("sends the audio to an OpenAI-style /audio/transcriptions server and returns what was said", async () => {
    const transcriber = createTranscriber({ ...base, AI_PROVIDER: "openai-compatible", AI_BASE_URL: `${env.STAND_IN_URL}/v1` }, env)!;
    const name = `note-${crypto.randomUUID()}.ogg`;
    const text = await transcriber.transcribe({
      bytes: new TextEncoder().encode("SPEECH: I just finished reading Dune"),
      mediaType: "audio/ogg",
      fileName: name,
    });
    expect(text).toBe("I just finished reading Dune");
    const requests = (await (await fetch(`${env.STAND_IN_URL}/__transcriptions`)).json()) as Array<{ model: string; fileName: string }>;
    expect(requests.find((r) => r.fileName === name)).toMatchObject({ model: "whisper-1" });
  });

  it("fails an overloaded speech server as an outage (the inbox retries it), not as silence", async () => {
    const transcriber = createTranscriber({ ...base, AI_PROVIDER: "openai-compatible", AI_BASE_URL: `${env.STAND_IN_URL}/v1` }, env)!;
    const error = await transcriber
      .transcribe({ bytes: new TextEncoder().encode("OUTAGE"), mediaType: "audio/ogg", fileName: "x.ogg" })
      .catch((e: unknown) => e);
    expect(classifyFailure(error)).toBe("transient");
  });

  it("has no transcriber with the offline model", () => {
    expect(createTranscriber({ ...base, AI_PROVIDER: "offline" }, env)).toBeNull();
  });
});

describe("a voice note's length is what its bytes say, not what the sender's client says (issue 25)", () => {
  const MB = 1024 * 1024;
  const speech = (deadlineMs?: number): Transcriber =>
    createTranscriber({ ...loadConfig(env), AI_PROVIDER: "openai-compatible", AI_BASE_URL: `${env.STAND_IN_URL}/v1` }, env, deadlineMs)!;

  /** Puts a file of any size up (putTelegramFile spreads its bytes into one call: fine for small files only). */
  async function putLargeFile(id: string, bytes: Uint8Array, size?: number): Promise<void> {
    let binary = "";
    for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    await fetch(`${env.STAND_IN_URL}/__files`, { method: "POST", body: JSON.stringify({ fileId: id, base64: btoa(binary), size }) });
  }

  /** Reads a voice note the way the agent answers one (download, transcription), counting what it cost. */
  async function read(
    voice: { file_id: string; duration: number; file_size?: number },
    options: { maxSeconds?: number; deadlineMs?: number } = {},
  ) {
    const cost = { downloads: 0, bytes: 0, transcriptions: 0 };
    const transcriber = speech(options.deadlineMs);
    const deps: InputDeps = {
      async download(id, maxBytes, signal) {
        cost.downloads++;
        const bytes = await sender().downloadFile(id, maxBytes, signal);
        cost.bytes += bytes.length;
        return bytes;
      },
      transcriber: {
        name: transcriber.name,
        transcribe(audio, signal) {
          cost.transcriptions++;
          return transcriber.transcribe(audio, signal);
        },
      },
      seesImages: false,
      voiceMaxSeconds: options.maxSeconds ?? 600,
      rewrite: () => {},
      importFile: () => Promise.reject(new Error("no import in this test")),
    };
    const { text, extras } = readTelegramMessage({ voice: { ...voice, mime_type: "audio/ogg" } });
    const item = { id: `telegram:${voice.file_id}`, text, extras: JSON.stringify(extras), received_at: Date.now() } as InboxItem;
    const input = await telegramTurnInput(item, { kind: "telegram", externalId: "1:1" }, deps, new AbortController().signal);
    return { input, ...cost };
  }

  it("refuses a note whose own file_size is past the cap, downloading nothing", async () => {
    const id = fileId();
    await putTelegramFile(id, "SPEECH: hours and hours", 20 * MB);
    const { input, ...cost } = await read({ file_id: id, duration: 5, file_size: 20 * MB });
    expect(input).toEqual({ kind: "reply", reply: tooLongVoice(600) });
    expect(cost).toEqual({ downloads: 0, bytes: 0, transcriptions: 0 });
  });

  it("refuses a note getFile says is past the cap, before fetching its bytes", async () => {
    const id = fileId();
    await putTelegramFile(id, "SPEECH: hours and hours", 20 * MB);
    const { input, ...cost } = await read({ file_id: id, duration: 5 });
    expect(input).toEqual({ kind: "reply", reply: tooLongVoice(600) });
    expect(cost).toEqual({ downloads: 1, bytes: 0, transcriptions: 0 });
  });

  it("stops reading a note's bytes at the cap when nobody said its size", async () => {
    const id = fileId();
    // A minute's cap is 600 kB and some: 1 MB of "speech" said to weigh 1 byte.
    await putLargeFile(id, new TextEncoder().encode(`SPEECH: ${"la ".repeat(350_000)}`), 1);
    const { input, ...cost } = await read({ file_id: id, duration: 5 }, { maxSeconds: 60 });
    expect(input).toEqual({ kind: "reply", reply: tooLongVoice(60) });
    expect(cost).toEqual({ downloads: 1, bytes: 0, transcriptions: 0 });
  });

  it("still listens to a note within the cap", async () => {
    const id = fileId();
    await putTelegramFile(id, "SPEECH: I just finished reading Dune");
    const { input, ...cost } = await read({ file_id: id, duration: 5, file_size: 36 });
    expect(input.kind).toBe("turn");
    expect(cost).toEqual({ downloads: 1, bytes: 36, transcriptions: 1 });
  });

  it("answers once, honestly, when a transcription runs past its deadline: not an outage to retry", async () => {
    const id = fileId();
    const marker = crypto.randomUUID();
    await putTelegramFile(id, `SPEECH: ${marker}`);
    const control = (path: string) =>
      fetch(`${env.STAND_IN_URL}${path}`, { method: "POST", body: JSON.stringify({ target: "transcription", match: marker }) });
    await control("/__hang");
    try {
      const { input, ...cost } = await read({ file_id: id, duration: 5 }, { deadlineMs: 300 });
      expect(input).toEqual({ kind: "reply", reply: LISTENING_TIMED_OUT });
      expect(cost).toMatchObject({ downloads: 1, transcriptions: 1 });
    } finally {
      await control("/__release");
    }
  });
});
