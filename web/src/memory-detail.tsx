// One memory: its details, where and when Soma learned it (the message, the channel, the date), how it
// relates to other memories, the events it is part of. Edit its name, type and details; forget it
// (with undo) or bring a forgotten one back.
import { useEffect, useRef, useState, type FormEvent } from "react";
import { api, type MemoryDetail } from "./api";
import { channelName, formatFull } from "./format";
import { ErrorNote, FormActions, useSaving } from "./forms";
import { useTelegramForm } from "./telegram";
import { Link, memoryPath } from "./router";
import { UndoBar, useUndo } from "./undo";

type Loaded = { state: "loading" } | { state: "error"; message: string } | { state: "ready"; detail: MemoryDetail };

function detailsText(properties: Record<string, unknown>): string {
  return Object.entries(properties)
    .map(([key, value]) => `${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`)
    .join("\n");
}

/** "author: Frank Herbert" lines back into details; a value left as it was keeps its original type. */
function parseDetails(text: string, before: Record<string, unknown>): Record<string, string | number | boolean | null> | string {
  const details: Record<string, string | number | boolean | null> = {};
  for (const [n, line] of text.split("\n").entries()) {
    if (!line.trim()) continue;
    const colon = line.indexOf(":");
    if (colon < 1) return `Line ${n + 1} needs a colon, like “author: Frank Herbert”.`;
    const key = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    const old = before[key];
    details[key] = old !== undefined && typeof old !== "string" && JSON.stringify(old) === value ? (old as number | boolean | null) : value;
  }
  return details;
}

function EditForm({ detail, onSaved, onCancel }: { detail: MemoryDetail; onSaved: (d: MemoryDetail) => void; onCancel: () => void }) {
  const { memory } = detail;
  const [name, setName] = useState(memory.name);
  const [type, setType] = useState(memory.type);
  const [details, setDetails] = useState(detailsText(memory.properties));
  const state = useSaving();
  const form = useRef<HTMLFormElement>(null);
  const unsaved = name !== memory.name || type !== memory.type || details !== detailsText(memory.properties);
  useTelegramForm(form, { label: "Save", unsaved, saving: state.saving });
  const save = (event: FormEvent) => {
    event.preventDefault();
    const properties = parseDetails(details, memory.properties);
    if (typeof properties === "string") return state.fail(properties);
    void state.save(async () => {
      const { memory: saved } = await api.editMemory(memory.id, { name: name.trim(), type: type.trim(), properties });
      onSaved({ ...detail, memory: saved });
    });
  };
  return (
    <form className="edit-form" ref={form} onSubmit={save} aria-label={`Edit ${memory.name}`}>
      <label>
        Name
        {/* biome-ignore lint/a11y/noAutofocus: the form opens when the person clicks Edit; its first field takes the focus. */}
        <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} autoFocus />
      </label>
      <label>
        Type
        <input value={type} onChange={(e) => setType(e.target.value)} required maxLength={40} pattern="[A-Za-z][A-Za-z0-9_ \-]*" />
      </label>
      <label>
        Details <span className="muted">(one per line, like “author: Frank Herbert”)</span>
        <textarea value={details} onChange={(e) => setDetails(e.target.value)} rows={Math.max(3, details.split("\n").length + 1)} />
      </label>
      <ErrorNote message={state.error} />
      <FormActions saving={state.saving} saveLabel="Save" onCancel={onCancel} />
    </form>
  );
}

export function MemoryPage({ id, timeZone }: { id: string; timeZone: string }) {
  const [loaded, setLoaded] = useState<Loaded>({ state: "loading" });
  const [editing, setEditing] = useState(false);
  const [reloads, setReloads] = useState(0);
  const undo = useUndo();
  // biome-ignore lint/correctness/useExhaustiveDependencies: `reloads` is the reload trigger (the effect refetches when it changes).
  useEffect(() => {
    let current = true;
    setLoaded({ state: "loading" });
    setEditing(false);
    api.memory(id).then(
      (detail) => current && setLoaded({ state: "ready", detail }),
      (error: Error) => current && setLoaded({ state: "error", message: error.message }),
    );
    return () => {
      current = false;
    };
  }, [id, reloads]);
  const reload = () => setReloads((n) => n + 1);

  const back = (
    <Link to="/app/memories" className="back">
      ← All memories
    </Link>
  );
  if (loaded.state === "loading")
    return (
      <section className="memory-detail">
        {back}
        <p className="muted" role="status">
          Loading the memory…
        </p>
      </section>
    );
  if (loaded.state === "error")
    return (
      <section className="memory-detail">
        {back}
        <div className="error-box" role="alert">
          <p className="error">This memory could not be shown: {loaded.message}</p>
          <button type="button" className="secondary" onClick={reload}>
            Try again
          </button>
        </div>
      </section>
    );

  const { memory, relations, events } = loaded.detail;
  const forgotten = memory.status === "archived";
  const setStatus = (status: MemoryDetail["memory"]["status"]) =>
    setLoaded({ state: "ready", detail: { ...loaded.detail, memory: { ...memory, status } } });
  const forget = async () => {
    try {
      await api.forget(memory.id);
      setStatus("archived");
      undo.offer(`Forgot ${memory.name}.`, async () => {
        await api.restore(memory.id);
        setStatus("active");
      });
    } catch (error) {
      undo.fail(`Could not forget ${memory.name}: ${(error as Error).message}`);
    }
  };
  const restore = async () => {
    try {
      await api.restore(memory.id);
      undo.dismiss();
      setStatus("active");
    } catch (error) {
      undo.fail(`Could not restore ${memory.name}: ${(error as Error).message}`);
    }
  };
  const details = Object.entries(memory.properties);

  return (
    <section className="memory-detail" aria-labelledby="memory-title">
      {back}
      <header className="memory-header">
        <h1 id="memory-title">{memory.name}</h1>
        <span className="badge">{memory.type}</span>
        {forgotten && <span className="badge warn">forgotten</span>}
      </header>
      <UndoBar undo={undo} />
      {editing ? (
        <EditForm
          detail={loaded.detail}
          onSaved={(detail) => {
            setLoaded({ state: "ready", detail });
            setEditing(false);
          }}
          onCancel={() => setEditing(false)}
        />
      ) : (
        <>
          <h2>Details</h2>
          {details.length === 0 ? (
            <p className="muted">No details yet.</p>
          ) : (
            <dl className="properties">
              {details.map(([key, value]) => (
                <div key={key}>
                  <dt>{key}</dt>
                  <dd>{typeof value === "string" ? value : JSON.stringify(value)}</dd>
                </div>
              ))}
            </dl>
          )}
          <div className="actions">
            {forgotten ? (
              <button type="button" onClick={() => void restore()}>
                Restore
              </button>
            ) : (
              <>
                <button type="button" onClick={() => setEditing(true)}>
                  Edit
                </button>
                <button type="button" className="secondary" onClick={() => void forget()}>
                  Forget
                </button>
              </>
            )}
          </div>
        </>
      )}
      <h2>Where Soma learned it</h2>
      <p className="dates">
        Told <time dateTime={memory.toldAt}>{formatFull(memory.toldAt, timeZone)}</time>
        {memory.happenedAt ? (
          <>
            {" "}
            · happened <time dateTime={memory.happenedAt}>{formatFull(memory.happenedAt, timeZone)}</time>
          </>
        ) : (
          <span className="muted"> · when it happened was not said</span>
        )}
      </p>
      {memory.source ? (
        <p className="provenance">
          From{" "}
          {memory.source.app
            ? `${memory.source.app}, through MCP,`
            : memory.source.title
              ? `${channelName(memory.source.kind)}, «${memory.source.title}»,`
              : channelName(memory.source.kind)}{" "}
          on <time dateTime={memory.source.at}>{formatFull(memory.source.at, timeZone)}</time>
          {memory.source.excerpt && <q>{memory.source.excerpt}</q>}
        </p>
      ) : (
        <p className="muted">
          Not recorded (learned <time dateTime={memory.createdAt}>{formatFull(memory.createdAt, timeZone)}</time>).
        </p>
      )}
      <h2>Related memories</h2>
      {relations.length === 0 ? (
        <p className="muted">No relations yet.</p>
      ) : (
        <ul className="plain-list" aria-label="Related memories">
          {relations.map((r) => (
            <li key={r.id}>
              <span className="muted">
                {r.direction === "out" ? `${r.type.replaceAll("_", " ")} →` : `← ${r.type.replaceAll("_", " ")}`}
              </span>{" "}
              <Link to={memoryPath(r.other.id)}>{r.other.name}</Link> <span className="badge">{r.other.type}</span>
              {r.until && <span className="muted"> (until {formatFull(r.until, timeZone)})</span>}
            </li>
          ))}
        </ul>
      )}
      <h2>Events</h2>
      {events.length === 0 ? (
        <p className="muted">No events yet.</p>
      ) : (
        <ul className="plain-list" aria-label="Events">
          {events.map((e) => (
            <li key={e.id}>
              <strong>{e.kind}</strong> · <time dateTime={e.occurredAt}>{formatFull(e.occurredAt, timeZone)}</time> ·{" "}
              <span className="muted">{e.status}</span>
              {typeof e.payload.text === "string" && <> · {e.payload.text}</>}
              {typeof e.payload.subject === "string" && <> · {e.payload.subject}</>}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
