// Sends replies through the Telegram Bot API (grammY's Api client, pointed at TELEGRAM_API_ROOT).
// Telegram refusing (GrammyError) and the network failing (HttpError) are told apart: 429 and 5xx
// are retried, honouring retry_after; other refusals are final.
//
// Files (sendDocument) go up as multipart/form-data under the same deadlines and retries as text.
//
// Deadlines (grammY's own default is 500 s a call): each Bot API call gives up after `timeoutSeconds`
// and then fails as a grammY HttpError (its `error` says "Request to 'sendMessage' timed out …"),
// which is retried like any network failure; a whole sendText (every piece, retry and retry wait)
// gives up after `sendDeadlineMs` with DeadlineError("telegram"); a 429 whose retry_after would end
// past that deadline is not waited out but thrown at once (GrammyError 429). HttpError, DeadlineError,
// GrammyError 429 and 5xx are all transient. typing() is bounded by `typingDeadlineMs` and never throws.
import { Api, GrammyError, HttpError, InputFile } from "grammy";
import type { Config } from "../../platform/config";
import { DeadlineError, withDeadline } from "../../platform/deadline";

/** Telegram's limit for one message. */
export const TELEGRAM_MESSAGE_LIMIT = 4096;
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

export class TelegramSender {
  readonly #api: Api;
  readonly #sleep: Sleep;
  readonly #sendDeadlineMs: number;
  readonly #typingDeadlineMs: number;

  constructor(token: string, apiRoot: string, settings: TelegramSenderOptions = {}) {
    this.#api = new Api(token, { apiRoot, timeoutSeconds: settings.timeoutSeconds ?? DEFAULT_TELEGRAM_TIMEOUT_SECONDS });
    this.#sleep = settings.sleep ?? abortableSleep;
    this.#sendDeadlineMs = settings.sendDeadlineMs ?? DEFAULT_SEND_DEADLINE_MS;
    this.#typingDeadlineMs = settings.typingDeadlineMs ?? DEFAULT_TYPING_DEADLINE_MS;
  }

  /**
   * Sends `text`, split at paragraph or line boundaries when longer than Telegram allows. Within the
   * send deadline or not at all: DeadlineError("telegram") when it expires (pieces already sent stay sent).
   */
  async sendText(chatId: number, text: string): Promise<void> {
    const pieces = splitMessage(text);
    const deadlineAt = Date.now() + this.#sendDeadlineMs;
    await withDeadline(
      async (signal) => {
        for (const piece of pieces) {
          await this.#withRetries(
            () => this.#api.sendMessage(chatId, piece, { link_preview_options: { is_disabled: true } }, grammySignal(signal)),
            signal,
            deadlineAt,
          );
        }
      },
      this.#sendDeadlineMs,
      "telegram",
    );
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
