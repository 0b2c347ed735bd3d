// What a Telegram message becomes in the conversation, when the agent answers it (agents/user-agent.ts):
// - text: the person's words; a forward is marked as someone else's ("Forwarded from Bob: …").
// - a voice note, audio or video note: downloaded, transcribed, and from then on the person's message
//   like typed words (the inbox keeps the transcript, so a retry does not listen again); the reply
//   starts with what Soma heard, so the person can see it.
// - a photo, or an image sent as a file: given to a model that sees images as an image part with the
//   caption; the bytes are dropped from the conversation once answered (Soma keeps what it learned, not
//   the image). A model without vision gets the caption, and the person an honest word.
// A failed download or transcription throws: the inbox retries it like any outage, never drops it. What
// cannot work at all (too long a note, no speech model, nothing to read) is answered here, no model turn.
// A note's length is the sender's word, so its bytes are held to what that length allows (issue 25):
// past the cap (the message's file_size, getFile's, the bytes read) it is too long, whatever it claims;
// and a transcription that runs past its deadline is answered once, honestly, not retried as an outage
// (each retry would download and transcribe the same hours of audio again for the whole retry window).
import type { FileUIPart, UIMessage } from "ai";
import type { SourceRef } from "../db/repositories/memory";
import { DeadlineError } from "../platform/deadline";
import type { Audio, Transcriber } from "./integrations/model/transcription";
import { FileTooLargeError } from "./integrations/telegram-sender";
import type { InboxItem } from "./inbox";
import {
  type Attachment,
  CAPTION_ONLY,
  extrasOf,
  forwardedText,
  LISTENING_TIMED_OUT,
  MAX_IMAGE_BYTES,
  type MessageExtras,
  NO_SPEECH_MODEL,
  NO_VISION,
  NOTHING_HEARD,
  recordingMaxBytes,
  tooLongVoice,
} from "./telegram-message";
import { userMessage } from "./transcript";

export interface InputDeps {
  download(fileId: string, maxBytes: number, signal: AbortSignal): Promise<Uint8Array>;
  /** null: no speech model configured (the offline model). */
  transcriber: Transcriber | null;
  seesImages: boolean;
  voiceMaxSeconds: number;
  /** Reads an import sent as a document and starts it; the reply says what it holds, or why not. */
  importFile(file: Extract<Attachment, { kind: "import" }>, signal: AbortSignal): Promise<string>;
  /** Keeps what a voice note said in the inbox, in place of the note. */
  rewrite(text: string, extras: MessageExtras): void;
}

/** The message to answer with a turn; or a reply of its own, without a turn. */
export type TelegramTurnInput = { kind: "turn"; message: UIMessage } | { kind: "reply"; reply: string };

export async function telegramTurnInput(
  item: InboxItem,
  source: SourceRef,
  deps: InputDeps,
  signal: AbortSignal,
): Promise<TelegramTurnInput> {
  const extras = extrasOf(item.extras);
  const at = new Date(item.received_at);
  const { attachment } = extras;
  if (attachment?.kind === "voice") {
    const heard = await listen(attachment, deps, signal);
    if (typeof heard !== "string") return heard;
    // A caption said with an audio file goes with what was heard.
    const text = [item.text.trim(), heard].filter(Boolean).join("\n\n");
    const { attachment: _listened, ...rest } = extras;
    deps.rewrite(text, { ...rest, heard: true });
    return turnOf(item.id, text, source, at, { ...rest, heard: true });
  }
  if (attachment?.kind === "import") return { kind: "reply", reply: await deps.importFile(attachment, signal) };
  if (attachment?.kind === "image") {
    if (!deps.seesImages) {
      if (!item.text.trim()) return { kind: "reply", reply: NO_VISION };
      return turnOf(item.id, item.text, source, at, { ...extras, captionOnly: true });
    }
    const bytes = await deps.download(attachment.fileId, MAX_IMAGE_BYTES, signal);
    const image: FileUIPart = {
      type: "file",
      mediaType: attachment.mediaType,
      url: `data:${attachment.mediaType};base64,${base64(bytes)}`,
    };
    const turn = turnOf(item.id, item.text.trim() || "(a photo)", source, at, extras);
    turn.message.parts = [image, ...turn.message.parts];
    return turn;
  }
  return turnOf(item.id, item.text, source, at, extras);
}

/** The transcript of a voice note, or the reply that says why there is none. */
async function listen(
  voice: Extract<Attachment, { kind: "voice" }>,
  deps: InputDeps,
  signal: AbortSignal,
): Promise<string | TelegramTurnInput> {
  const tooLong: TelegramTurnInput = { kind: "reply", reply: tooLongVoice(deps.voiceMaxSeconds) };
  const maxBytes = recordingMaxBytes(voice.recording ?? "audio", deps.voiceMaxSeconds);
  if (voice.durationSeconds > deps.voiceMaxSeconds || (voice.bytes ?? 0) > maxBytes) return tooLong;
  if (!deps.transcriber) return { kind: "reply", reply: NO_SPEECH_MODEL };
  let bytes: Uint8Array;
  try {
    // Refused from getFile's file_size before a byte is fetched, else as soon as the bytes pass the cap.
    bytes = await deps.download(voice.fileId, maxBytes, signal);
  } catch (error) {
    if (error instanceof FileTooLargeError) return tooLong;
    throw error;
  }
  const audio: Audio = { bytes, mediaType: voice.mediaType, fileName: voice.fileName };
  let text: string;
  try {
    text = await deps.transcriber.transcribe(audio, signal);
  } catch (error) {
    if (error instanceof DeadlineError && error.what === "transcription") return { kind: "reply", reply: LISTENING_TIMED_OUT };
    throw error;
  }
  return text || { kind: "reply", reply: NOTHING_HEARD };
}

/** What a message held besides its words, kept with it in the conversation (the web chat shows it). */
interface InputMarks {
  voice?: boolean;
  photo?: boolean;
  /** A photo the model could not see: only its caption was read. */
  captionOnly?: boolean;
  forwardedFrom?: string;
}

function turnOf(
  id: string,
  text: string,
  source: SourceRef,
  at: Date,
  extras: MessageExtras & { captionOnly?: boolean },
): Extract<TelegramTurnInput, { kind: "turn" }> {
  const words = extras.forwardedFrom ? forwardedText(extras.forwardedFrom, text) : text;
  const message = userMessage(id, words, source, at);
  const marks: InputMarks = {
    ...(extras.heard ? { voice: true } : {}),
    ...(extras.attachment?.kind === "image" ? { photo: true } : {}),
    ...(extras.captionOnly ? { captionOnly: true } : {}),
    ...(extras.forwardedFrom ? { forwardedFrom: extras.forwardedFrom } : {}),
  };
  message.metadata = { ...(message.metadata as object), ...marks };
  return { kind: "turn", message };
}

/** How the reply to `message` starts: what Soma heard of a voice note, or why only a caption was read. */
export function replyPrefix(message: UIMessage | undefined): string {
  const marks = (message?.metadata ?? {}) as InputMarks;
  if (marks.captionOnly) return `_${CAPTION_ONLY}_\n\n`;
  if (!marks.voice || !message) return "";
  const heard = message.parts
    .map((p) => (p.type === "text" ? p.text : ""))
    .join("")
    .trim();
  return `🎤 _“${escapeMarkdown(heard)}”_\n\n`;
}

/** A message with its images replaced by a word: the conversation keeps what was said, not the bytes. */
export function withoutImages(message: UIMessage): UIMessage {
  if (!message.parts.some((p) => p.type === "file")) return message;
  return { ...message, parts: message.parts.map((p) => (p.type === "file" ? { type: "text" as const, text: "[photo] " } : p)) };
}

/** The person's words inside the reply's Markdown, shown exactly as they were said. */
function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!<>|~]/g, "\\$&").replace(/\s*\n\s*/g, " ");
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}
