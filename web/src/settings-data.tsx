// Everything Soma keeps, out and in: export downloads the file (GET /api/export answers it as an
// attachment), or the Markdown vault (GET /api/export/vault, a .zip that opens in Obsidian); import
// reads a file — a JSON export or a vault's .zip — shows what it would add (the server's dry run writes
// nothing) and only then applies it.
import { useRef, useState, type ChangeEvent } from "react";
import { api, EXPORT_PATH, type ImportBody, type ImportCounts, VAULT_PATH } from "./api";
import { IN_MINI_APP } from "./router";
import { type ConversationExport, ConversationImports, readImportFile } from "./settings-imports";

const KINDS: Array<[keyof ImportCounts, string, string]> = [
  ["entities", "memory", "memories"],
  ["facts", "fact", "facts"],
  ["edges", "relation", "relations"],
  ["events", "event or reminder", "events and reminders"],
  ["messages", "chat message", "chat messages"],
  ["sources", "source message", "source messages"],
];

/** "3 memories, 1 fact" — the kinds with something in them; "nothing new" when all are 0. */
function describeCounts(counts: ImportCounts): string {
  const parts = KINDS.filter(([key]) => counts[key] > 0).map(([key, one, many]) => `${counts[key]} ${counts[key] === 1 ? one : many}`);
  return parts.length ? parts.join(", ") : "nothing new";
}

type ImportState =
  | { step: "idle" }
  | { step: "checking"; name: string }
  | { step: "preview"; name: string; file: ImportBody; counts: ImportCounts }
  | { step: "importing"; name: string; file: ImportBody; counts: ImportCounts }
  | { step: "done"; name: string; counts: ImportCounts }
  | { step: "error"; message: string };

export function DataSettings() {
  const [state, setState] = useState<ImportState>({ step: "idle" });
  const [conversations, setConversations] = useState<ConversationExport | null>(null);
  const input = useRef<HTMLInputElement>(null);
  const reset = () => {
    setState({ step: "idle" });
    setConversations(null);
    if (input.current) input.current.value = "";
  };
  const choose = async (event: ChangeEvent<HTMLInputElement>) => {
    const file = event.target.files?.[0];
    if (!file) return reset();
    setState({ step: "checking", name: file.name });
    setConversations(null);
    try {
      // Soma's own file goes to the server's preview; another assistant's conversations are read here.
      const read = await readImportFile(file);
      if ("conversations" in read) {
        setConversations(read.conversations);
        return setState({ step: "idle" });
      }
      const body: ImportBody = read.soma;
      const { imported } = await api.importFile(body, true);
      setState({ step: "preview", name: file.name, file: body, counts: imported });
    } catch (error) {
      setState({ step: "error", message: `${file.name} cannot be imported: ${(error as Error).message}` });
    }
  };
  const apply = async () => {
    if (state.step !== "preview") return;
    setState({ ...state, step: "importing" });
    try {
      const { imported } = await api.importFile(state.file, false);
      setState({ step: "done", name: state.name, counts: imported });
    } catch (error) {
      setState({ step: "error", message: `The import failed: ${(error as Error).message}` });
    }
  };
  const nothing = (counts: ImportCounts) => Object.values(counts).every((n) => n === 0);
  return (
    <>
      <h2>Export</h2>
      <p className="muted">
        Everything Soma keeps about you — memories, facts with their history, reminders and the conversation — as one JSON file, or your
        memories, facts and reminders as Markdown notes that open as an Obsidian vault.
      </p>
      {IN_MINI_APP ? (
        // A download inside Telegram goes nowhere useful: the bot sends the same file into the chat.
        <p>
          Send <code>/export</code> to the bot: the file arrives in your chat with Soma.
        </p>
      ) : (
        <div className="actions">
          <a className="button secondary inline" href={EXPORT_PATH} download>
            Download my data (JSON)
          </a>
          <a className="button secondary inline" href={VAULT_PATH} download>
            Download as Markdown (Obsidian vault)
          </a>
        </div>
      )}
      <h2>Import</h2>
      <p className="muted">
        Load a Soma export file (.json) or vault (.zip), a ChatGPT data export (.zip, or its conversations.json) or a Claude export's
        conversations.json. You see what it would add before anything changes; what you already have is not added twice.
      </p>
      <label className="file-field">
        File to import
        <input
          ref={input}
          type="file"
          accept="application/json,.json,application/zip,.zip"
          onChange={(e) => void choose(e)}
          disabled={state.step === "checking" || state.step === "importing"}
        />
      </label>
      {state.step === "checking" && (
        <p className="muted" role="status">
          Reading {state.name}…
        </p>
      )}
      {(state.step === "preview" || state.step === "importing") && (
        <fieldset className="confirm" aria-label="Import preview">
          <p>
            {nothing(state.counts)
              ? `${state.name} holds nothing you do not already have.`
              : `Importing ${state.name} would add ${describeCounts(state.counts)}.`}
          </p>
          <div className="actions">
            {!nothing(state.counts) && (
              <button type="button" onClick={() => void apply()} disabled={state.step === "importing"}>
                {state.step === "importing" ? "Importing…" : "Import"}
              </button>
            )}
            <button type="button" className="secondary" onClick={reset} disabled={state.step === "importing"}>
              {nothing(state.counts) ? "Close" : "Cancel"}
            </button>
          </div>
        </fieldset>
      )}
      {state.step === "done" && (
        <div className="toast" role="status">
          <span>
            Imported {state.name}: added {describeCounts(state.counts)}.
          </span>
          <button type="button" className="secondary" aria-label="Dismiss" onClick={reset}>
            ×
          </button>
        </div>
      )}
      {state.step === "error" && (
        <div className="error-box" role="alert">
          <p className="error">{state.message}</p>
          <button type="button" className="secondary" onClick={reset}>
            Dismiss
          </button>
        </div>
      )}
      <ConversationImports chosen={conversations} onDone={reset} />
    </>
  );
}
