// Issue 20: what a person sends besides text reaches Soma. Files come from Telegram's file server
// (getFile, then the bytes) within Telegram's 20 MB and Soma's own caps; speech becomes text through
// the configured transcriber — an OpenAI-style /audio/transcriptions server here (the stand-in listens
// to files that read "SPEECH: …"); the offline model has none, and says so rather than guess.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { FileTooLargeError, TelegramSender } from "../../agents/integrations/telegram-sender";
import { createTranscriber } from "../../agents/integrations/model/transcription";
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

  it("stops reading bytes past the cap even when Telegram did not give the size", async () => {
    const id = fileId();
    await putTelegramFile(id, "x".repeat(4096), 1);
    await expect(sender().downloadFile(id, 1000)).rejects.toBeInstanceOf(FileTooLargeError);
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
