// A Telegram reply written while the model writes it: the turn's UI message chunks feed a draft
// (sendMessageDraft, private chats) that grows as text arrives, with a short status while a tool runs
// ("Looking through your memories…"). The final reply is still sent once, by the inbox, as a message:
// a draft is only a preview (Telegram drops it after 30 s, or when the message arrives), so an agent
// that stops mid-stream leaves at most an abandoned draft, never a second message.
//
// Frames are throttled: the first as soon as there is something to show, then at most one per
// `intervalMs`, never two Bot API calls at once (the newest text wins; frames in between are skipped).
// Where Telegram refuses drafts, the stream falls back to "typing…" for the rest of the turn.
import type { UIMessageChunk } from "ai";
import type { DraftOutcome } from "./integrations/telegram-sender";

/** Telegram shows "typing…" for about 5 s; it is renewed a little sooner while a turn runs. */
const TYPING_EVERY_MS = 4_000;
/** Between two draft frames: Telegram animates the change, and a chat takes about one edit a second. */
const DRAFT_INTERVAL_MS = 1_000;

const TOOL_STATUS: Record<string, string> = {
  memory_recall: "Looking through your memories…",
  memory_capture: "Saving that to your memory…",
  memory_update: "Updating your memory…",
  memory_relate: "Saving that to your memory…",
  memory_forget: "Forgetting that…",
  fact_correct: "Updating what I know about you…",
  fact_forget: "Forgetting that…",
  schedule_create: "Setting a reminder…",
  routine_set: "Moving it…",
};

export interface DraftHost {
  draft(text: string): Promise<DraftOutcome>;
  typing(): void;
}

export class DraftStream {
  #text = "";
  #status: string | null = null;
  #shown = "";
  #sending: Promise<void> | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #typingTimer: ReturnType<typeof setInterval> | null = null;
  #lastFrameAt = 0;
  #unsupported = false;
  #closed = false;

  constructor(
    private readonly host: DraftHost,
    private readonly intervalMs = DRAFT_INTERVAL_MS,
  ) {}

  /** Feeds one chunk of the turn's stream. */
  push(chunk: UIMessageChunk): void {
    if (this.#closed) return;
    if (chunk.type === "text-delta") {
      this.#text += chunk.delta;
      this.#status = null;
    } else if (chunk.type === "tool-input-start" || (chunk.type === "tool-input-available" && !this.#status)) {
      // A streaming model announces a tool call as it starts writing it; another hands it over whole.
      this.#status = TOOL_STATUS[chunk.toolName] ?? "Working on it…";
      // The text before a tool call and the text after it are one reply: keep them apart by a paragraph.
      if (this.#text && !this.#text.endsWith("\n\n")) this.#text += "\n\n";
    } else return;
    this.#schedule();
  }

  /** The turn ended: no more frames (one in flight may still land; the final message replaces it). */
  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#typingTimer) clearInterval(this.#typingTimer);
    this.#timer = null;
    this.#typingTimer = null;
  }

  /** Resolves when the frame being sent (if any) is done (tests, and a tidy close). */
  async settled(): Promise<void> {
    while (this.#sending) await this.#sending;
  }

  #frame(): string {
    const body = this.#text.trim();
    if (!this.#status) return body;
    return body ? `${body}\n\n_${this.#status}_` : `_${this.#status}_`;
  }

  #schedule(): void {
    if (this.#unsupported || this.#timer || this.#sending) return;
    const wait = Math.max(0, this.#lastFrameAt + this.intervalMs - Date.now());
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#send();
    }, wait);
  }

  #send(): void {
    const frame = this.#frame();
    if (this.#closed || !frame || frame === this.#shown) return;
    this.#lastFrameAt = Date.now();
    this.#sending = this.host
      .draft(frame)
      .then((outcome) => {
        if (outcome === "unsupported") return this.#fallBackToTyping();
        this.#shown = frame;
      })
      .catch(() => {})
      .finally(() => {
        this.#sending = null;
        // Text that arrived while this frame was on its way goes in the next one.
        if (!this.#closed && this.#frame() !== this.#shown) this.#schedule();
      });
  }

  #fallBackToTyping(): void {
    this.#unsupported = true;
    if (this.#closed) return;
    this.host.typing();
    this.#typingTimer = setInterval(() => this.host.typing(), TYPING_EVERY_MS);
  }
}
