// Speech to text for voice notes, chosen by AI_PROVIDER like the chat model: Workers AI's Whisper
// (through the AI SDK's transcribe() and workers-ai-provider) in production; any server that speaks
// OpenAI's POST /audio/transcriptions (multipart: file, model → {text}), which whisper.cpp's server,
// faster-whisper-server and vLLM all do; none with the offline model (the person is told how to turn
// voice on, rather than given a made-up transcript).
// Every call has a deadline and honours the turn's signal; a failure throws, so the inbox retries the
// message like any outage instead of dropping what the person said. The deadline passing is the one
// exception (DeadlineError "transcription"): agents/telegram-input.ts answers that note once, since a note
// can be far longer than it claims and every retry would listen to all of it again (issue 25).
import { experimental_transcribe as transcribe } from "ai";
import { createWorkersAI } from "workers-ai-provider";
import type { Config } from "../../../platform/config";
import { withDeadline } from "../../../platform/deadline";
import { UpstreamHttpError } from "../../../platform/faults";

/** The longest one transcription may take (a ten-minute note takes Whisper a few seconds; past it, one honest answer). */
const TRANSCRIPTION_DEADLINE_MS = 60_000;
const DEFAULT_WORKERS_AI_MODEL = "@cf/openai/whisper-large-v3-turbo";
const DEFAULT_OPENAI_MODEL = "whisper-1";

export interface Audio {
  bytes: Uint8Array;
  /** e.g. audio/ogg for a Telegram voice note. */
  mediaType: string;
  /** A file name with the right extension: OpenAI-style servers pick the decoder from it. */
  fileName: string;
}

export interface Transcriber {
  readonly name: string;
  /** What was said, trimmed ("" for silence). */
  transcribe(audio: Audio, signal?: AbortSignal): Promise<string>;
}

/** The transcriber `config` names, or null when there is none (the offline model). */
export function createTranscriber(config: Config, env: { AI?: Ai }, deadlineMs = TRANSCRIPTION_DEADLINE_MS): Transcriber | null {
  switch (config.AI_PROVIDER) {
    case "offline":
      return null;
    case "openai-compatible":
      return openAiCompatibleTranscriber(config, deadlineMs);
    case "workers-ai":
      return workersAiTranscriber(env.AI, config.AI_TRANSCRIPTION_MODEL ?? DEFAULT_WORKERS_AI_MODEL, deadlineMs);
  }
}

function workersAiTranscriber(ai: Ai | undefined, model: string, deadlineMs: number): Transcriber {
  return {
    name: `workers-ai:${model}`,
    async transcribe(audio, signal) {
      if (!ai) throw new Error("AI_PROVIDER=workers-ai needs the AI binding");
      const workersAi = createWorkersAI({ binding: ai });
      const result = await withDeadline(
        (deadline) =>
          transcribe({
            model: workersAi.transcription(model as Parameters<typeof workersAi.transcription>[0]),
            audio: audio.bytes,
            abortSignal: signal ? AbortSignal.any([signal, deadline]) : deadline,
            maxRetries: 0,
          }),
        deadlineMs,
        "transcription",
      );
      return result.text.trim();
    },
  };
}

function openAiCompatibleTranscriber(config: Config, deadlineMs: number): Transcriber {
  const model = config.AI_TRANSCRIPTION_MODEL ?? DEFAULT_OPENAI_MODEL;
  return {
    name: `openai-compatible:${model}`,
    async transcribe(audio, signal) {
      if (!config.AI_BASE_URL) throw new Error("AI_PROVIDER=openai-compatible needs AI_BASE_URL");
      const url = `${config.AI_BASE_URL.replace(/\/$/, "")}/audio/transcriptions`;
      const form = new FormData();
      form.append("file", new Blob([audio.bytes], { type: audio.mediaType }), audio.fileName);
      form.append("model", model);
      form.append("response_format", "json");
      return withDeadline(
        async (deadline) => {
          const response = await fetch(url, {
            method: "POST",
            body: form,
            headers: config.AI_API_KEY ? { authorization: `Bearer ${config.AI_API_KEY}` } : {},
            signal: signal ? AbortSignal.any([signal, deadline]) : deadline,
          });
          const body = await response.text();
          if (!response.ok) throw new UpstreamHttpError("the speech server", response.status, body.slice(0, 300));
          const text = (JSON.parse(body) as { text?: unknown }).text;
          if (typeof text !== "string") throw new UpstreamHttpError("the speech server", response.status, "an answer without text");
          return text.trim();
        },
        deadlineMs,
        "transcription",
      );
    },
  };
}
