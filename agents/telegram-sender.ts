// Sends replies through the Telegram Bot API (grammY's Api client, pointed at TELEGRAM_API_ROOT).
// Telegram refusing (GrammyError) and the network failing (HttpError) are told apart: 429 and 5xx
// are retried, honouring retry_after; other refusals are final.
import { Api, GrammyError, HttpError } from "grammy";

/** Telegram's limit for one message. */
export const TELEGRAM_MESSAGE_LIMIT = 4096;
const MAX_ATTEMPTS = 4;
const MAX_RETRY_AFTER_SECONDS = 30;

export class TelegramSender {
  readonly #api: Api;

  constructor(token: string, apiRoot: string, private readonly sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))) {
    this.#api = new Api(token, { apiRoot });
  }

  /** Sends `text`, split at paragraph or line boundaries when longer than Telegram allows. */
  async sendText(chatId: number, text: string): Promise<void> {
    for (const chunk of splitMessage(text)) {
      await this.#withRetries(() => this.#api.sendMessage(chatId, chunk, { link_preview_options: { is_disabled: true } }));
    }
  }

  /** Shows "typing…" in the chat (best effort: a failure here never fails a turn). */
  async typing(chatId: number): Promise<void> {
    await this.#api.sendChatAction(chatId, "typing").catch(() => {});
  }

  async #withRetries<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (error) {
        const delay = retryDelay(error, attempt);
        if (delay === null || attempt >= MAX_ATTEMPTS) throw error;
        await this.sleep(delay);
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
