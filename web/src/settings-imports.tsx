// Conversations from ChatGPT and Claude, and pasted saved memories, into Soma (issue 30). The export is
// read here, in the browser (ChatGPT's .zip or conversations.json, Claude's conversations.json: an export
// of hundreds of MB never goes to the server whole); the person sees what it holds and what it would
// cost first, then the conversations go in batches and Soma reads them in the background, the progress
// shown here (and kept: the page can be left and opened again), cancellable at any time.
import { useEffect, useState } from "react";
import { api, type ConversationImport, type ImportBody } from "./api";
import { formatDay } from "./format";
import { ErrorNote } from "./forms";
import {
  counted,
  type ImportedConversation,
  parseExportJson,
  readExportText,
  readExportValue,
  summarize,
} from "../../platform/conversation-imports";

export interface ConversationExport {
  name: string;
  origin: "chatgpt" | "claude";
  conversations: ImportedConversation[];
}

/** Conversations a batch holds at most, and its weight: within what POST /api/imports/:id/conversations takes. */
const BATCH_CONVERSATIONS = 100;
const BATCH_BYTES = 3 * 1024 * 1024;
const ORIGIN = { chatgpt: "ChatGPT", claude: "Claude", pasted: "pasted memories" } as Record<string, string>;

/**
 * What a chosen file is: Soma's own (a JSON export, or a vault's .zip: sent as it is) or another
 * assistant's conversations (read here). Throws with what is wrong with anything else.
 */
export async function readImportFile(file: File): Promise<{ soma: ImportBody } | { conversations: ConversationExport }> {
  if (file.name.toLowerCase().endsWith(".zip") || file.type === "application/zip") {
    const bytes = new Uint8Array(await file.arrayBuffer());
    const { unzipSync, strFromU8 } = await import("fflate");
    const entries = unzipSync(bytes, { filter: (f) => f.name.startsWith("Soma/") || /(^|\/)conversations\.json$/.test(f.name) });
    const names = Object.keys(entries);
    if (names.some((name) => name.startsWith("Soma/"))) return { soma: { zip: bytes.buffer } };
    const found = names.find((name) => name.endsWith("conversations.json"));
    if (!found) throw new Error("this .zip holds neither a ChatGPT export's conversations.json nor a Soma vault.");
    return { conversations: { name: file.name, ...readExportText(strFromU8(entries[found]!)) } };
  }
  const text = await file.text();
  const value = parseExportJson(text);
  // Soma's own export says so; the server checks it (and gives its preview).
  if (value && typeof value === "object" && (value as { format?: unknown }).format === "soma-export") return { soma: { json: text } };
  return { conversations: { name: file.name, ...readExportValue(value) } };
}

/** JSON bodies of at most BATCH_CONVERSATIONS conversations and about BATCH_BYTES each. */
function batches(conversations: ImportedConversation[]): string[] {
  const out: string[] = [];
  let current: ImportedConversation[] = [];
  let size = 0;
  for (const conversation of conversations) {
    const weight = JSON.stringify(conversation).length;
    if (current.length > 0 && (current.length >= BATCH_CONVERSATIONS || size + weight > BATCH_BYTES)) {
      out.push(JSON.stringify({ conversations: current }));
      [current, size] = [[], 0];
    }
    current.push(conversation);
    size += weight;
  }
  if (current.length > 0) out.push(JSON.stringify({ conversations: current }));
  return out;
}

const percent = (part: number, whole: number) => `${whole > 0 ? Math.floor((part / whole) * 100) : 0} %`;

/** An import's progress, in words. */
function describeImport(job: ConversationImport): string {
  const what =
    job.origin === "pasted"
      ? "your pasted saved memories"
      : `${counted(job.conversations, "conversation", "conversations")} from ${ORIGIN[job.origin]}`;
  const added = `${counted(job.memories, "memory", "memories")} and ${counted(job.facts, "fact", "facts")}`;
  const found = `${added} so far`;
  switch (job.state) {
    case "receiving":
      return `Sending ${what}… ${percent(job.received, job.conversations)}`;
    case "running":
      return `Importing ${what}… ${percent(job.done, job.received)} (${found})`;
    case "done":
      return `Imported ${what}: ${added} added.`;
    case "cancelled":
      return `The import of ${what} was cancelled after ${job.done} (${found}).`;
    default:
      return `The import of ${what} paused after ${job.done}: your imports made the most model calls Soma makes for them in a day. Choose Continue tomorrow to go on where it stopped.`;
  }
}

/** The newest import, followed while it runs: its progress, and Cancel. */
function useImportProgress(started: string | null) {
  const [job, setJob] = useState<ConversationImport | null>(null);
  const [error, setError] = useState<string | null>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new import started is what makes it look again.
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        const newest = (await api.imports())[0] ?? null;
        if (stopped) return;
        setJob(newest);
        if (newest && (newest.state === "running" || newest.state === "receiving")) timer = setTimeout(() => void poll(), 1500);
      } catch (e) {
        if (!stopped) setError((e as Error).message);
      }
    };
    void poll();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [started]);
  return { job, setJob, error };
}

export function ConversationImports({ chosen, onDone }: { chosen: ConversationExport | null; onDone: () => void }) {
  const [started, setStarted] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);
  const [pasted, setPasted] = useState("");
  const { job, setJob, error } = useImportProgress(started);
  const underWay = job && (job.state === "running" || job.state === "receiving");

  const send = async (file: ConversationExport) => {
    setBusy(true);
    setFailure(null);
    try {
      const summary = summarize(file.conversations);
      let current = await api.createImport({
        origin: file.origin,
        conversations: summary.conversations,
        from: summary.from,
        to: summary.to,
      });
      setJob(current);
      for (const batch of batches(file.conversations)) {
        current = await api.sendConversations(current.id, batch);
        setJob(current);
      }
      current = await api.startImport(current.id);
      setJob(current);
      setStarted(current.id);
      onDone();
    } catch (e) {
      setFailure(`The import failed: ${(e as Error).message}`);
    } finally {
      setBusy(false);
    }
  };
  const sendPasted = async () => {
    setBusy(true);
    setFailure(null);
    try {
      const made = await api.importPasted(pasted);
      setPasted("");
      setJob(made);
      setStarted(made.id);
    } catch (e) {
      setFailure(`The import failed: ${(e as Error).message}`);
    } finally {
      setBusy(false);
    }
  };
  const resume = async (id: string) => {
    try {
      setJob(await api.startImport(id));
      setStarted(`${id}:${Date.now()}`);
    } catch (e) {
      setFailure(`Continuing failed: ${(e as Error).message}`);
    }
  };
  const cancel = async () => {
    if (!job) return;
    try {
      setJob(await api.cancelImport(job.id));
    } catch (e) {
      setFailure(`Cancelling failed: ${(e as Error).message}`);
    }
  };

  const preview = chosen && summarize(chosen.conversations);
  return (
    <>
      {chosen && preview && !busy && (
        <fieldset className="confirm" aria-label="Conversations preview">
          {preview.conversations === 0 ? (
            <p>{chosen.name} holds no conversations.</p>
          ) : (
            <p>
              {chosen.name} holds {preview.conversations.toLocaleString("en-GB")} conversations from {ORIGIN[chosen.origin]}
              {preview.from && preview.to ? `, from ${formatDay(preview.from, "UTC")} to ${formatDay(preview.to, "UTC")}` : ""}, with{" "}
              {preview.userMessages.toLocaleString("en-GB")} messages of yours. Soma reads only your own messages, about{" "}
              {(preview.userMessages * 2).toLocaleString("en-GB")} model calls; what the assistant said is never taken as being about you.
            </p>
          )}
          <div className="actions">
            {preview.userMessages > 0 && !underWay && (
              <button type="button" onClick={() => void send(chosen)}>
                Import conversations
              </button>
            )}
            <button type="button" className="secondary" onClick={onDone}>
              {preview.userMessages > 0 ? "Cancel" : "Close"}
            </button>
          </div>
          {underWay && <p className="muted">Another import is under way: wait for it to finish, or cancel it below.</p>}
        </fieldset>
      )}
      {job && (
        <div className="import-progress" role="status">
          <p className="import-state">{describeImport(job)}</p>
          {underWay && (
            <progress
              max={job.state === "receiving" ? job.conversations : Math.max(job.received, 1)}
              value={job.state === "receiving" ? job.received : job.done}
            />
          )}
          {underWay && (
            <button type="button" className="secondary" onClick={() => void cancel()}>
              Cancel import
            </button>
          )}
          {job.state === "stopped" && (
            <button type="button" className="secondary" onClick={() => void resume(job.id)}>
              Continue
            </button>
          )}
        </div>
      )}
      <ErrorNote message={failure ?? (error && `Imports could not be loaded: ${error}`)} />
      <label className="paste-field">
        Or paste saved memories from ChatGPT or Claude, one a line
        <textarea
          value={pasted}
          onChange={(e) => setPasted(e.target.value)}
          rows={4}
          disabled={busy}
          placeholder={"I'm vegetarian\nI live in Lisbon"}
        />
      </label>
      <button type="button" className="secondary" onClick={() => void sendPasted()} disabled={busy || !pasted.trim() || Boolean(underWay)}>
        Import pasted memories
      </button>
    </>
  );
}
