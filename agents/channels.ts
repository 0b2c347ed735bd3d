// What reaches the agent through a channel, and what a client of the chat protocol may send over the
// web socket. Every channel (Telegram, the WebSocket chat, POST /api/chat) shares one per-person budget
// (agents/rate-limit.ts) and one size limit, and its text is cleaned the same way. The conversation is
// the agent's own: a client's chat request contributes only its newest user message, as text; the
// history it carries, tool results, message rewrites and regenerations are never taken from it. A web
// message may carry one image (a data URL the browser has already made small), checked here like the
// text; the model sees it only if it can see images, and it leaves the conversation once answered.
import { MessageType, parseProtocolMessage } from "agents/chat";
import type { UIMessage } from "ai";
import { z } from "zod";
import { LONE_SURROGATE } from "../platform/clean-text";
import { MAX_IMAGE_BYTES, NO_VISION } from "./telegram-message";
import { userMessage } from "./transcript";

/** Longest message a person may send through any channel. */
export const MAX_MESSAGE_CHARS = 8000;

export const RATE_NOTICE = "You're writing faster than I can think. Give me a minute, then send it again.";
export const TOO_LONG = `That message is longer than ${MAX_MESSAGE_CHARS.toLocaleString("en-US")} characters; please send it in shorter parts.`;
export const NO_REGENERATE = "I can't redo an answer; send your message again instead.";
const EMPTY_MESSAGE = "That message had no text for me to read.";
export const ONE_IMAGE = "I can look at one image per message; please send them one at a time.";
export const BAD_IMAGE = `I can look at JPEG, PNG, WebP or GIF images of up to ${MAX_IMAGE_BYTES / 1024 / 1024} MB; that one I can't open.`;

/** The image types a model is given (what the web composer offers, and what Telegram photos are). */
const IMAGE_DATA_URL = /^data:(image\/(?:jpeg|png|webp|gif));base64,([A-Za-z0-9+/]*={0,2})$/;

/** An image a web client sent with its message, as the data URL it came in. */
export interface WebImage {
  mediaType: string;
  url: string;
}

// C0 controls other than tab, line feed and carriage return: Postgres text refuses NUL, and none of
// them carries meaning in a chat message.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching these characters is the point
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/g;

/** Text any store and any model accepts: no NUL or other control characters, no half of a surrogate
 * pair (a lone half cannot be shown, stored as JSON in Postgres, or read by a model; it is dropped). */
export function cleanText(text: string): string {
  return text.replace(CONTROL, "").replace(LONE_SURROGATE, "");
}

/** What the agent does with one frame from a client of the chat protocol. */
export type FrameVerdict =
  /** Not a chat request: handled by the SDK as it is (cancel, clear, stream resume, …). */
  | { kind: "pass" }
  /** A frame a client may not send (history rewrites, tool results): ignored. */
  | { kind: "ignore"; reason: string }
  /** A chat request: run a turn on this one new message. */
  | { kind: "turn"; requestId: string; messageId: string; text: string; image?: WebImage }
  /** A chat request whose newest message is already in the conversation: nothing to run. */
  | { kind: "done"; requestId: string }
  /** A chat request that is refused: the client is told why. */
  | { kind: "refuse"; requestId: string; notice: string };

const ChatRequestBody = z.looseObject({
  trigger: z.string().optional(),
  messages: z.array(z.looseObject({ id: z.unknown(), role: z.unknown(), parts: z.unknown() })).default([]),
});

/** Message ids only the server gives: the inbox's `telegram:<update id>` and an import's `import:<id>`. A
 * client's message under one would pass for a Telegram message (and meet the inbox's dedupe of that update). */
const SERVER_ID = /^(?:telegram|import):/i;

/** Judges one WebSocket frame. `known(id)` says whether a message id is already in the conversation. */
export function screenFrame(raw: string | ArrayBuffer, known: (id: string) => boolean): FrameVerdict {
  if (typeof raw !== "string") return { kind: "ignore", reason: "binary frame" };
  const event = parseProtocolMessage(raw);
  if (!event) return { kind: "pass" };
  if (event.type === "messages") return { kind: "ignore", reason: "a client may not rewrite the conversation" };
  if (event.type === "tool-result" || event.type === "tool-approval") return { kind: "ignore", reason: "this agent has no client tools" };
  if (event.type !== "chat-request") return { kind: "pass" };
  const requestId = typeof event.id === "string" && event.id ? event.id.slice(0, 200) : crypto.randomUUID();
  if (event.init.method !== "POST") return { kind: "ignore", reason: "a chat request must be a POST" };
  let body: z.infer<typeof ChatRequestBody>;
  try {
    body = ChatRequestBody.parse(JSON.parse(String(event.init.body ?? "")));
  } catch {
    return { kind: "refuse", requestId, notice: EMPTY_MESSAGE };
  }
  if (body.trigger === "regenerate-message") return { kind: "refuse", requestId, notice: NO_REGENERATE };
  const newest = [...body.messages].reverse().find((m) => m.role === "user");
  if (!newest) return { kind: "refuse", requestId, notice: EMPTY_MESSAGE };
  const clientId =
    typeof newest.id === "string" && /^[\w:.-]{1,100}$/.test(newest.id) && !SERVER_ID.test(newest.id) ? newest.id : undefined;
  if (clientId && known(clientId)) return { kind: "done", requestId };
  const parts = Array.isArray(newest.parts) ? (newest.parts as Array<{ type?: unknown; text?: unknown }>) : [];
  const text = cleanText(parts.map((p) => (p?.type === "text" && typeof p.text === "string" ? p.text : "")).join("")).trim();
  const files = parts.filter((p) => p?.type === "file");
  if (files.length > 1) return { kind: "refuse", requestId, notice: ONE_IMAGE };
  const image = files.length === 1 ? imageOf(files[0]) : undefined;
  if (image === null) return { kind: "refuse", requestId, notice: BAD_IMAGE };
  if (!text && !image) return { kind: "refuse", requestId, notice: EMPTY_MESSAGE };
  if (text.length > MAX_MESSAGE_CHARS) return { kind: "refuse", requestId, notice: TOO_LONG };
  // A client's id is kept when it is new (the client tracks its message by it); else the server names it.
  return { kind: "turn", requestId, messageId: clientId ?? `web:${crypto.randomUUID()}`, text, ...(image ? { image } : {}) };
}

/** A file part that is an image a model may be given, or null: only a base64 data URL of an image type,
 * its media type the one it says, its bytes within MAX_IMAGE_BYTES. A URL elsewhere would be fetched by
 * the model's provider on a client's say. */
function imageOf(part: unknown): WebImage | null {
  const { url, mediaType } = (part ?? {}) as { url?: unknown; mediaType?: unknown };
  if (typeof url !== "string" || url.length > ((MAX_IMAGE_BYTES + 2) / 3) * 4 + 64) return null;
  const [, type, data] = IMAGE_DATA_URL.exec(url) ?? [];
  if (!type || type !== mediaType || !data || data.length % 4 !== 0) return null;
  const bytes = (data.length / 4) * 3 - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);
  return bytes <= MAX_IMAGE_BYTES ? { mediaType: type, url } : null;
}

/**
 * The message a web chat request adds to the conversation, or the notice that answers it without a turn.
 * An image goes to a model that sees images as a file part before the words; a model without vision
 * gets the words alone (the message marked so, and the web chat says the photo was not seen), and an
 * image with no words gets the honest answer Telegram gets.
 */
export function webTurnMessage(turn: { messageId: string; text: string; image?: WebImage }, seesImages: boolean): UIMessage | string {
  const source = { kind: "web", externalId: turn.messageId };
  if (!turn.image) return userMessage(turn.messageId, turn.text, source);
  if (!seesImages && !turn.text) return NO_VISION;
  // The same marks a Telegram photo gets (agents/telegram-input.ts): the web chat shows them.
  const message = userMessage(turn.messageId, turn.text || "(a photo)", source);
  message.metadata = { ...(message.metadata as object), photo: true, ...(seesImages ? {} : { captionOnly: true }) };
  if (seesImages) message.parts = [{ type: "file", mediaType: turn.image.mediaType, url: turn.image.url }, ...message.parts];
  return message;
}

/** A chat request frame that runs one turn over `messages` (the agent's conversation and the new message). */
export function chatRequest(requestId: string, messages: readonly unknown[]): string {
  return JSON.stringify({
    type: MessageType.CF_AGENT_USE_CHAT_REQUEST,
    id: requestId,
    init: { method: "POST", body: JSON.stringify({ messages }) },
  });
}

/** The chat protocol's answer to a request that ends without a turn (refused: `error`, with the notice). */
export function endOfRequest(requestId: string, notice?: string): string {
  return JSON.stringify({
    type: MessageType.CF_AGENT_USE_CHAT_RESPONSE,
    id: requestId,
    body: notice ?? "",
    done: true,
    ...(notice ? { error: true } : {}),
  });
}
