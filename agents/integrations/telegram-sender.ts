// Sends replies through the Telegram Bot API (grammY's Api client, pointed at TELEGRAM_API_ROOT).
// Telegram refusing (GrammyError) and the network failing (HttpError) are told apart: 429 and 5xx
// are retried, honouring retry_after; other refusals are final.
//
// Files (sendDocument) go up as multipart/form-data under the same deadlines and retries as text.
//
// The model's replies go as formatting (sendMarkdown: its Markdown as Telegram HTML, telegram-format.ts);
// every other text (notices, commands' answers, a person's own reminder words) goes as it is (sendText).
// A formatted message Telegram refuses to parse is sent again as plain text: formatting never loses a
// reply. While a turn runs, draft() streams the reply as it is written (sendMessageDraft, private chats).
//
// Deadlines (grammY's own default is 500 s a call): each Bot API call gives up after `timeoutSeconds`
// and then fails as a grammY HttpError (its `error` says "Request to 'sendMessage' timed out …"),
// which is retried like any network failure; a whole sendText (every piece, retry and retry wait)
// gives up after `sendDeadlineMs` with DeadlineError("telegram"); a 429 whose retry_after would end
// past that deadline is not waited out but thrown at once (GrammyError 429). HttpError, DeadlineError,
// GrammyError 429 and 5xx are all transient. typing() is bounded by `typingDeadlineMs` and never throws.
import { Api, GrammyError, HttpError, InputFile } from "grammy";
import remend from "remend";
import type { Config } from "../../platform/config";
import { DeadlineError, withDeadline } from "../../platform/deadline";
import { UpstreamHttpError } from "../../platform/faults";
import { logJson } from "../../platform/log";
import { type FormattedMessage, formatForTelegram, TELEGRAM_MESSAGE_LIMIT } from "./telegram-format";

/** One message to send: its plain text, and its HTML when it is formatted; the last one may carry a button. */
type Piece = Partial<FormattedMessage> & { plain: string; button?: WebAppButton };

/** A button under a message that opens a page of the Mini App (Bot API InlineKeyboardButton with `web_app`). */
export interface WebAppButton {
  label: string;
  /** An https URL of one of the Mini App's pages (Telegram refuses any other). */
  url: string;
}

/** What a draft can be: still growing, or Telegram does not take drafts in this chat (show "typing…" instead). */
export type DraftOutcome = "shown" | "unsupported";
const MAX_ATTEMPTS = 4;
const MAX_RETRY_AFTER_SECONDS = 30;

const DEFAULT_TELEGRAM_TIMEOUT_SECONDS = 10;
const DEFAULT_SEND_DEADLINE_MS = 45_000;
const DEFAULT_TYPING_DEADLINE_MS = 5_000;

type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export interface TelegramSenderOptions {
  /** Deadline of one Bot API call, in seconds (grammY's `timeoutSeconds`). Default 10. */
  timeoutSeconds?: number;
  /** Deadline of one whole sendText: every piece, every retry and every wait between. Default 45 000 ms. */
  sendDeadlineMs?: number;
  /** Deadline of typing() (best effort). Default 5 000 ms. */
  typingDeadlineMs?: number;
  /** Waits between retries (tests pass a quick one); the signal aborts at the send's deadline. */
  sleep?: Sleep;
}

/** grammY's Node typings name the `abort-controller` package's AbortSignal; at run time any standard one works. */
type GrammySignal = Parameters<Api["sendMessage"]>[3];
const grammySignal = (signal: AbortSignal) => signal as unknown as GrammySignal;

const abortableSleep: Sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });

/** The sender the configuration names (bot token, API root, per-call deadline); null without a bot token. */
export function telegramSenderFor(config: Config): TelegramSender | null {
  if (!config.TELEGRAM_BOT_TOKEN) return null;
  return new TelegramSender(config.TELEGRAM_BOT_TOKEN, config.TELEGRAM_API_ROOT, { timeoutSeconds: config.TELEGRAM_API_TIMEOUT_SECONDS });
}

/** Telegram's limit for a file a bot downloads (getFile). */
export const TELEGRAM_DOWNLOAD_LIMIT = 20 * 1024 * 1024;

/** A file is larger than the caller takes: final, the person is told rather than the download retried. */
export class FileTooLargeError extends Error {
  constructor(readonly bytes: number | null) {
    super(`the file is larger than Soma takes${bytes ? ` (${bytes} bytes)` : ""}`);
    this.name = "FileTooLargeError";
  }
}

export class TelegramSender {
  readonly #api: Api;
  readonly #fileRoot: string;
  readonly #sleep: Sleep;
  readonly #sendDeadlineMs: number;
  readonly #typingDeadlineMs: number;

  constructor(token: string, apiRoot: string, settings: TelegramSenderOptions = {}) {
    this.#api = new Api(token, { apiRoot, timeoutSeconds: settings.timeoutSeconds ?? DEFAULT_TELEGRAM_TIMEOUT_SECONDS });
    this.#fileRoot = `${apiRoot.replace(/\/$/, "")}/file/bot${token}`;
    this.#sleep = settings.sleep ?? abortableSleep;
    this.#sendDeadlineMs = settings.sendDeadlineMs ?? DEFAULT_SEND_DEADLINE_MS;
    this.#typingDeadlineMs = settings.typingDeadlineMs ?? DEFAULT_TYPING_DEADLINE_MS;
  }

  /**
   * Sends `text`, split at paragraph or line boundaries when longer than Telegram allows. Within the
   * send deadline or not at all: DeadlineError("telegram") when it expires (pieces already sent stay sent).
   */
  async sendText(chatId: number, text: string, button?: WebAppButton): Promise<void> {
    const pieces = splitMessage(text);
    await this.#send(
      chatId,
      pieces.map((plain, index) => (button && index === pieces.length - 1 ? { plain, button } : { plain })),
    );
  }

  /** Sends the model's Markdown as Telegram formatting, split like sendText, under the same deadline. */
  async sendMarkdown(chatId: number, markdown: string): Promise<void> {
    await this.#send(chatId, formatForTelegram(markdown));
  }

  /**
   * Shows `markdown`, the reply so far, as the chat's draft `draftId` (Bot API sendMessageDraft: a
   * private chat's "being written" preview, replaced by the final message). Half-written Markdown is
   * closed first (remend), so `**bo` shows bold rather than asterisks; past one message's length the
   * draft shows the last message's worth. Best effort within the typing deadline: "unsupported" when
   * Telegram refuses drafts in this chat (a 400 or 403), so the caller shows "typing…" instead; any other
   * failure is only a missed frame.
   */
  async draft(chatId: number, draftId: number, markdown: string): Promise<DraftOutcome> {
    const piece = formatForTelegram(remend(markdown)).at(-1)!;
    try {
      await withDeadline(
        (signal) => this.#api.sendMessageDraft(chatId, draftId, piece.html, { parse_mode: "HTML" }, grammySignal(signal)),
        this.#typingDeadlineMs,
        "telegram",
      );
      return "shown";
    } catch (error) {
      return error instanceof GrammyError && (error.error_code === 400 || error.error_code === 403) ? "unsupported" : "shown";
    }
  }

  /**
   * Downloads a file a person sent (getFile, then the file itself), at most `maxBytes` (never more than
   * Telegram's 20 MB): a larger one is FileTooLargeError, whether Telegram says so (getFile's file_size,
   * the file server's Content-Length) or the bytes do.
   * Within the send deadline, honouring `signal`; a failure throws (the inbox retries an outage).
   */
  async downloadFile(fileId: string, maxBytes = TELEGRAM_DOWNLOAD_LIMIT, signal?: AbortSignal): Promise<Uint8Array> {
    const limit = Math.min(maxBytes, TELEGRAM_DOWNLOAD_LIMIT);
    const deadlineAt = Date.now() + this.#sendDeadlineMs;
    return withDeadline(
      async (deadline) => {
        const both = signal ? AbortSignal.any([signal, deadline]) : deadline;
        const file = await this.#withRetries(() => this.#api.getFile(fileId, grammySignal(both)), both, deadlineAt).catch(
          (error: unknown) => {
            if (error instanceof GrammyError && /file is too big/i.test(error.description)) throw new FileTooLargeError(null);
            throw error;
          },
        );
        if ((file.file_size ?? 0) > limit) throw new FileTooLargeError(file.file_size ?? null);
        if (!file.file_path) throw new Error("Telegram gave no path for the file");
        const response = await fetch(`${this.#fileRoot}/${file.file_path}`, { signal: both });
        if (!response.ok || !response.body) throw new UpstreamHttpError("Telegram's file server", response.status);
        // The file server's own word on the size, before a byte is read; then the bytes themselves.
        const declared = Number(response.headers.get("content-length") ?? 0);
        if (declared > limit) {
          await response.body.cancel();
          throw new FileTooLargeError(declared);
        }
        return readAtMost(response.body, limit);
      },
      this.#sendDeadlineMs,
      "telegram",
    );
  }

  async #send(chatId: number, pieces: Piece[]): Promise<void> {
    const deadlineAt = Date.now() + this.#sendDeadlineMs;
    await withDeadline(
      async (signal) => {
        for (const piece of pieces) await this.#withRetries(() => this.#sendPiece(chatId, piece, signal), signal, deadlineAt);
      },
      this.#sendDeadlineMs,
      "telegram",
    );
  }

  /** One message: formatted, or plain when it has no formatting or Telegram cannot parse its formatting. */
  async #sendPiece(chatId: number, piece: Piece, signal: AbortSignal): Promise<void> {
    const options = {
      link_preview_options: { is_disabled: true },
      ...(piece.button ? { reply_markup: { inline_keyboard: [[{ text: piece.button.label, web_app: { url: piece.button.url } }]] } } : {}),
    };
    if (piece.html !== undefined) {
      try {
        await this.#api.sendMessage(chatId, piece.html, { ...options, parse_mode: "HTML" }, grammySignal(signal));
        return;
      } catch (error) {
        if (!isFormattingRefused(error)) throw error;
        logJson("warn", { telegram: "formatting refused; sent as plain text", chatId, description: error.description });
      }
    }
    await this.#api.sendMessage(chatId, piece.plain, options, grammySignal(signal));
  }

  /**
   * Sends a file as a document (Bot API sendDocument, multipart), with an optional caption, under the
   * same deadline and retries as sendText. The bytes are kept in memory so that a retry sends them again.
   */
  async sendDocument(chatId: number, file: { name: string; bytes: Uint8Array }, caption?: string): Promise<void> {
    const deadlineAt = Date.now() + this.#sendDeadlineMs;
    await withDeadline(
      (signal) =>
        this.#withRetries(
          () => this.#api.sendDocument(chatId, new InputFile(file.bytes, file.name), caption ? { caption } : {}, grammySignal(signal)),
          signal,
          deadlineAt,
        ),
      this.#sendDeadlineMs,
      "telegram",
    );
  }

  /** Shows "typing…" in the chat (best effort: a failure or a slow Bot API never fails or holds a turn). */
  async typing(chatId: number): Promise<void> {
    await withDeadline(
      (signal) => this.#api.sendChatAction(chatId, "typing", undefined, grammySignal(signal)),
      this.#typingDeadlineMs,
      "telegram",
    ).catch(() => {});
  }

  async #withRetries<T>(call: () => Promise<T>, signal: AbortSignal, deadlineAt: number): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (error) {
        if (signal.aborted) throw signal.reason instanceof DeadlineError ? signal.reason : error;
        const delay = retryDelay(error, attempt);
        // Final, out of attempts, or a wait that would outlast the deadline: the caller decides now.
        if (delay === null || attempt >= MAX_ATTEMPTS || Date.now() + delay >= deadlineAt) throw error;
        await this.#sleep(delay, signal);
        if (signal.aborted) throw signal.reason instanceof DeadlineError ? signal.reason : error;
      }
    }
  }
}

/** The whole body, refused as FileTooLargeError as soon as it passes `limit` bytes. */
async function readAtMost(body: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > limit) throw new FileTooLargeError(size);
    chunks.push(chunk);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes;
}

/** Telegram could not parse a formatted message (a converter bug, never the person's fault). */
function isFormattingRefused(error: unknown): error is GrammyError {
  return error instanceof GrammyError && error.error_code === 400 && /parse entities|message is too long/i.test(error.description);
}

/** Milliseconds to wait before retrying, or null when the failure is final. */
function retryDelay(error: unknown, attempt: number): number | null {
  if (error instanceof GrammyError) {
    if (error.error_code === 429) return Math.min(error.parameters.retry_after ?? 1, MAX_RETRY_AFTER_SECONDS) * 1000;
    if (error.error_code >= 500) return 250 * 2 ** (attempt - 1);
    return null;
  }
  if (error instanceof HttpError) return 250 * 2 ** (attempt - 1);
  return null;
}

/** Splits text into pieces of at most `limit` characters, preferring paragraph, line, then word breaks. */
export function splitMessage(text: string, limit = TELEGRAM_MESSAGE_LIMIT): string[] {
  const pieces: string[] = [];
  let rest = text.trim();
  while (rest.length > limit) {
    const window = rest.slice(0, limit);
    // The first kind of break that leaves at least half a message, in order of preference.
    const cut = ["\n\n", "\n", " "].map((separator) => window.lastIndexOf(separator)).find((index) => index > limit / 2);
    const at = cut ?? limit;
    pieces.push(rest.slice(0, at).trimEnd());
    rest = rest.slice(at).trimStart();
  }
  if (rest.length > 0) pieces.push(rest);
  return pieces.length > 0 ? pieces : [""];
}
