// What a Telegram message holds besides its text, read once at the webhook and stored with it in the
// inbox: a voice note or audio to transcribe, a photo (or an image sent as a file) to look at, who a
// forwarded message came from, or a kind Soma does not read (a sticker, a location, a poll…), which gets
// one short, kind reply and no model turn. Only ids and small facts are kept here, never file bytes:
// the agent downloads a file when it answers, and keeps what it learned rather than the file.
import { z } from "zod";

/** The largest image sent to the model (Telegram's own photos are at most 1280 px and ~300 KB). */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

/** What kind of recording a note is: each is encoded at its own highest bitrate. */
const RECORDINGS = ["voice", "audio", "video_note"] as const;
export type Recording = (typeof RECORDINGS)[number];

/**
 * How many bytes a second of each kind of recording takes at most, and a fixed allowance on top (headers,
 * an MP3's cover art). A note's `duration` is what the sender's client says; its size is not up to it
 * (the message's file_size, getFile's, and finally the bytes themselves), so a recording larger than any
 * of `maxSeconds` could be is refused as too long, whatever duration it claims (issue 25):
 * - voice: Telegram's apps record Opus in Ogg, mono, at about 16–32 kbit/s; Opus voice is transparent
 *   by 64 kbit/s. 64 kbit/s (8,000 B/s) and a quarter again for the container and a generous encoder:
 *   10,000 B/s, so 600 s is 6 MB. (A note that says 5 s and weighs 20 MB is hours of speech at 8 kbit/s.)
 * - audio: a music file may be MP3 at 320 kbit/s, its highest (40,000 B/s), and a quarter again: 50,000
 *   B/s, and 1 MB for tags and cover art (600 s: 31 MB, so Telegram's own 20 MB is the cap).
 * - video_note: a round video of at most 640 px at up to about 1.6 Mbit/s: 200,000 B/s.
 * A liar is still held to the cap's bytes at the lowest bitrate it can encode; the transcription's deadline
 * bounds the rest (agents/telegram-input.ts: one honest answer, never a retry).
 */
const RECORDING_RATES: Record<Recording, { bytesPerSecond: number; allowance: number }> = {
  voice: { bytesPerSecond: 10_000, allowance: 64 * 1024 },
  audio: { bytesPerSecond: 50_000, allowance: 1024 * 1024 },
  video_note: { bytesPerSecond: 200_000, allowance: 256 * 1024 },
};

/** The most bytes a `recording` of at most `maxSeconds` (VOICE_MAX_SECONDS) may have. */
export function recordingMaxBytes(recording: Recording, maxSeconds: number): number {
  const { bytesPerSecond, allowance } = RECORDING_RATES[recording];
  return maxSeconds * bytesPerSecond + allowance;
}

export const Attachment = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("voice"),
    fileId: z.string().min(1).max(256),
    durationSeconds: z.number().int().nonnegative(),
    mediaType: z.string().max(100),
    fileName: z.string().max(200),
    bytes: z.number().int().nonnegative().optional(),
    /** Which kind of recording (its highest bitrate); a message stored before it was kept counts as audio, the largest. */
    recording: z.enum(RECORDINGS).optional(),
  }),
  z.object({
    kind: z.literal("image"),
    fileId: z.string().min(1).max(256),
    mediaType: z.string().max(100),
    bytes: z.number().int().nonnegative().optional(),
  }),
  /** An export of another assistant's conversations, or saved memories (agents/telegram-import.ts). */
  z.object({
    kind: z.literal("import"),
    fileId: z.string().min(1).max(256),
    fileName: z.string().max(200),
    bytes: z.number().int().nonnegative().optional(),
  }),
]);
export type Attachment = z.infer<typeof Attachment>;

/** Kinds of message Soma answers with a word of its own, without a model turn. */
export const OTHER_KINDS = ["sticker", "animation", "location", "contact", "poll", "dice", "video", "document", "other"] as const;
export type OtherKind = (typeof OTHER_KINDS)[number];

export const MessageExtras = z.object({
  attachment: Attachment.optional(),
  /** Who wrote a forwarded message ("Bob", "a hidden sender", a channel's title). */
  forwardedFrom: z.string().max(200).optional(),
  other: z.enum(OTHER_KINDS).optional(),
  /** The message was a voice note, already transcribed: its text is what was heard. */
  heard: z.boolean().optional(),
});
export type MessageExtras = z.infer<typeof MessageExtras>;

/** What a stored message holds besides its text (its extras as JSON; nothing for plain text). */
export function extrasOf(json: string | null): MessageExtras {
  return json ? MessageExtras.parse(JSON.parse(json)) : {};
}

/** The part of a Telegram message this reads (grammY's Message has it all; tests pass plain objects). */
interface TelegramMessageLike {
  text?: string;
  caption?: string;
  voice?: { file_id: string; duration: number; mime_type?: string; file_size?: number };
  audio?: { file_id: string; duration: number; mime_type?: string; file_size?: number; file_name?: string };
  video_note?: { file_id: string; duration: number; file_size?: number };
  photo?: Array<{ file_id: string; width: number; height: number; file_size?: number }>;
  document?: { file_id: string; mime_type?: string; file_size?: number; file_name?: string };
  forward_origin?:
    | { type: "user"; sender_user: { first_name: string; last_name?: string } }
    | { type: "hidden_user"; sender_user_name: string }
    | { type: "chat"; sender_chat: { title?: string } }
    | { type: "channel"; chat: { title?: string } };
  sticker?: unknown;
  animation?: unknown;
  location?: unknown;
  venue?: unknown;
  contact?: unknown;
  poll?: unknown;
  dice?: unknown;
  video?: unknown;
}

/** The text (or caption) of `message`, and what else it holds. */
export function readTelegramMessage(message: TelegramMessageLike): { text: string; extras: MessageExtras } {
  const text = message.text ?? message.caption ?? "";
  const extras: MessageExtras = {};
  const forwardedFrom = forwardOrigin(message.forward_origin);
  if (forwardedFrom) extras.forwardedFrom = forwardedFrom;
  const attachment = attachmentOf(message);
  if (attachment) extras.attachment = attachment;
  else if (!text.trim()) extras.other = otherKind(message) ?? "other";
  return { text, extras };
}

/** A document the bot reads as an import (agents/telegram-import.ts): by its name, or its type. */
function isImportFile(document: { file_name?: string; mime_type?: string }): boolean {
  return /\.(json|zip|txt)$/i.test(document.file_name ?? "") || /^application\/(json|zip)$/.test(document.mime_type ?? "");
}

function attachmentOf(message: TelegramMessageLike): Attachment | null {
  const { voice, audio, video_note: videoNote, photo, document } = message;
  if (voice) return voiceOf("voice", voice.file_id, voice.duration, voice.mime_type ?? "audio/ogg", "voice.ogg", voice.file_size);
  if (audio) {
    const mediaType = audio.mime_type ?? "audio/mpeg";
    const fileName = audio.file_name ?? `audio.${extension(mediaType)}`;
    return voiceOf("audio", audio.file_id, audio.duration, mediaType, fileName, audio.file_size);
  }
  if (videoNote) return voiceOf("video_note", videoNote.file_id, videoNote.duration, "video/mp4", "video-note.mp4", videoNote.file_size);
  if (photo?.length) {
    // The largest size under the cap (Telegram lists them smallest first).
    const fitting = photo.filter((p) => (p.file_size ?? 0) <= MAX_IMAGE_BYTES);
    const best = (fitting.length ? fitting : photo.slice(0, 1)).reduce((a, b) => (b.width * b.height > a.width * a.height ? b : a));
    return { kind: "image", fileId: best.file_id, mediaType: "image/jpeg", ...(best.file_size ? { bytes: best.file_size } : {}) };
  }
  if (document && isImportFile(document)) {
    const fileName = (document.file_name ?? "conversations.json").slice(0, 200);
    return { kind: "import", fileId: document.file_id, fileName, ...(document.file_size ? { bytes: document.file_size } : {}) };
  }
  if (document?.mime_type?.startsWith("image/") && /^image\/(jpeg|png|webp|gif)$/.test(document.mime_type)) {
    return {
      kind: "image",
      fileId: document.file_id,
      mediaType: document.mime_type,
      ...(document.file_size ? { bytes: document.file_size } : {}),
    };
  }
  return null;
}

function voiceOf(recording: Recording, fileId: string, duration: number, mediaType: string, fileName: string, bytes?: number): Attachment {
  const durationSeconds = Math.max(0, Math.round(duration));
  return { kind: "voice", fileId, durationSeconds, mediaType, fileName, recording, ...(bytes ? { bytes } : {}) };
}

function extension(mediaType: string): string {
  return /\/(?:x-)?(\w+)/.exec(mediaType)?.[1]?.replace("mpeg", "mp3") ?? "bin";
}

function forwardOrigin(origin: TelegramMessageLike["forward_origin"]): string | null {
  if (!origin) return null;
  switch (origin.type) {
    case "user":
      return [origin.sender_user.first_name, origin.sender_user.last_name].filter(Boolean).join(" ") || "someone";
    case "hidden_user":
      return origin.sender_user_name || "someone";
    case "chat":
      return origin.sender_chat.title || "a group";
    case "channel":
      return origin.chat.title || "a channel";
    default:
      return "someone";
  }
}

function otherKind(message: TelegramMessageLike): OtherKind | null {
  if (message.sticker) return "sticker";
  if (message.animation) return "animation";
  if (message.location || message.venue) return "location";
  if (message.contact) return "contact";
  if (message.poll) return "poll";
  if (message.dice) return "dice";
  if (message.video) return "video";
  if (message.document) return "document";
  return null;
}

/** The one reply to a kind Soma does not read: short, kind, and saying what it does read. */
export function otherKindReply(kind: OtherKind): string {
  switch (kind) {
    case "sticker":
    case "animation":
      return "😊 I can't see stickers or GIFs, but I can read text, listen to voice notes and look at photos.";
    case "location":
      return "Thanks! I don't keep locations. If you're somewhere new, send /timezone and the city, so reminders follow your clock.";
    case "contact":
      return "I can't save contacts from a card, but tell me about the person in a message and I'll remember it.";
    case "poll":
    case "dice":
      return "I can't take part in polls or games, but I'm happy to talk — send me a message.";
    case "video":
      return "I can't watch videos yet. Send a photo, a voice note or a message instead.";
    case "document":
      return "I can't read that file. I read photos, and ChatGPT or Claude exports (/import). Paste what matters as text and I'll remember it.";
    case "other":
      return "I can read text, listen to voice notes and look at photos — that one I can't read yet.";
  }
}

// What a person is told when a voice note or photo cannot be read (agents/telegram-input.ts).
export const NO_SPEECH_MODEL =
  "I can't listen to voice notes here yet: this Soma has no speech-to-text model. (Whoever runs it can turn voice on with AI_PROVIDER=workers-ai, or an OpenAI-style speech server.) Could you type it instead?";
export const NOTHING_HEARD = "I couldn't make out any words in that voice note. Could you try again, or type it?";
/** A transcription that ran past its deadline: answered once, never retried (a note can claim to be shorter than it is). */
export const LISTENING_TIMED_OUT =
  "I couldn't finish listening to that recording in time: it may be much longer than it says, or my speech service is slow right now. Could you send a shorter one, or type the gist?";
export const NO_VISION =
  "I can't see photos with the model I'm using, so I can't tell what's in it. Tell me about it in words and I'll remember.";
export const CAPTION_ONLY = "(I can't see photos with the model I'm using, so I only read your caption.)";

export function tooLongVoice(maxSeconds: number): string {
  return `That recording is longer than ${Math.round(maxSeconds / 60)} minutes, more than I can listen to. Could you send a shorter one, or type the gist?`;
}

const FORWARDED = /^Forwarded from ([^\n]*):\n([\s\S]*)$/;

/**
 * How a forwarded message is kept in the conversation: marked as someone else's words on a first line
 * of its own (the sender's name never breaks it). The turn fences the words for the model
 * (agents/turn/tools/untrusted-memory.ts), and no fact about the person is taken from them.
 */
export function forwardedText(from: string, text: string): string {
  return `Forwarded from ${from.replace(/\s+/g, " ").trim()}:\n${text}`;
}

/** Who a forwarded message came from and their words, or null when `text` is not a forward. */
export function forwardedParts(text: string): { from: string; words: string } | null {
  const match = FORWARDED.exec(text);
  return match ? { from: match[1] ?? "", words: match[2] ?? "" } : null;
}
