// Where a person writes to Soma on the web: a message box (Enter sends, Shift+Enter breaks the line),
// and one image to go with it, picked with the attach button or pasted into the box. The image is made
// small before it is sent (composer-image.ts) and shown until then, with a way to take it back.
import type { FileUIPart } from "ai";
import { type ClipboardEvent, type FormEvent, type KeyboardEvent, type ReactNode, useRef, useState } from "react";
import { IMAGE_TYPES, imageIn, prepareImage } from "./composer-image";

interface ComposerProps {
  /** A turn is running: nothing more can be sent yet. */
  busy: boolean;
  connecting: boolean;
  send(text: string, image: FileUIPart | null): void;
}

export function Composer({ busy, connecting, send }: ComposerProps): ReactNode {
  const [draft, setDraft] = useState("");
  const [image, setImage] = useState<FileUIPart | null>(null);
  const [preparing, setPreparing] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const picker = useRef<HTMLInputElement>(null);
  const box = useRef<HTMLTextAreaElement>(null);

  // Only the image attached last counts, however long an earlier one takes to prepare.
  const latest = useRef(0);

  const attach = async (file: File) => {
    const attempt = ++latest.current;
    setPreparing(true);
    setProblem(null);
    const prepared = await prepareImage(file);
    if (attempt !== latest.current) return;
    setPreparing(false);
    if ("error" in prepared) return setProblem(prepared.error);
    setImage(prepared);
    box.current?.focus();
  };
  const submit = () => {
    const text = draft.trim();
    if ((!text && !image) || busy || preparing) return;
    send(text, image);
    setDraft("");
    setImage(null);
    setProblem(null);
  };
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    submit();
  };
  // Enter sends, Shift+Enter starts a new line; Enter that confirms an IME composition does neither.
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key !== "Enter" || event.shiftKey || event.nativeEvent.isComposing) return;
    event.preventDefault();
    submit();
  };
  // A pasted image is attached; pasted text is pasted as usual.
  const onPaste = (event: ClipboardEvent<HTMLTextAreaElement>) => {
    const file = imageIn(event.clipboardData.files);
    if (!file) return;
    event.preventDefault();
    void attach(file);
  };

  return (
    <>
      {problem && (
        <p className="notice" role="alert">
          {problem}
        </p>
      )}
      {image && (
        <div className="attachment">
          <img src={image.url} alt={`Attached: ${image.filename ?? "image"}`} />
          <button type="button" className="secondary" onClick={() => setImage(null)}>
            Remove image
          </button>
        </div>
      )}
      <form className="composer" onSubmit={onSubmit}>
        <button
          type="button"
          className="secondary attach"
          aria-label="Attach an image"
          title="Attach an image (or paste one)"
          disabled={preparing}
          onClick={() => picker.current?.click()}
        >
          <svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true">
            <path
              d="M21 11.5l-8.6 8.6a5.5 5.5 0 0 1-7.8-7.8l8.6-8.6a3.7 3.7 0 0 1 5.2 5.2l-8.6 8.6a1.8 1.8 0 0 1-2.6-2.6l7.9-7.9"
              fill="none"
              stroke="currentColor"
              strokeWidth="2"
              strokeLinecap="round"
              strokeLinejoin="round"
            />
          </svg>
        </button>
        <input
          ref={picker}
          type="file"
          accept={IMAGE_TYPES.join(",")}
          hidden
          data-testid="image-picker"
          onChange={(event) => {
            const file = event.target.files?.[0];
            if (file) void attach(file);
            // The same file picked again is a new choice.
            event.target.value = "";
          }}
        />
        <textarea
          ref={box}
          aria-label="Message"
          aria-describedby="composer-hint"
          placeholder="I just finished reading…"
          rows={Math.min(6, Math.max(1, draft.split("\n").length))}
          value={draft}
          onChange={(event) => setDraft(event.target.value)}
          onKeyDown={onKeyDown}
          onPaste={onPaste}
          // biome-ignore lint/a11y/noAutofocus: the chat page exists to type a message; its one input starts focused.
          autoFocus
        />
        <button type="submit" disabled={busy || preparing || (!draft.trim() && !image)}>
          Send
        </button>
      </form>
      <p id="composer-hint" className="muted hint">
        Enter sends · Shift+Enter for a new line
        {preparing && " · preparing the image…"}
        {connecting && " · connecting…"}
      </p>
    </>
  );
}
