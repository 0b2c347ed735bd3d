// What Soma believes about the person, by category, each with how sure it is and the message it came
// from. A correction supersedes the fact (the old one stays as its history, shown collapsed under the
// fact that replaced it); deleting removes the fact and its history, so it asks first.
import { useRef, useState, type FormEvent } from "react";
import { LoadState, useLoaded } from "./loaded";
import { api, FACT_CATEGORIES, type Fact, type FactCategory } from "./api";
import { channelName, formatDay, formatFull, formatWhen } from "./format";
import { Confirm, ErrorNote, FormActions, useSaving } from "./forms";
import { useTelegramForm } from "./telegram";

/** Each superseded fact under the current fact its chain of corrections ends at; the rest (chain broken) apart. */
function historyByFact(current: Fact[], superseded: Fact[]): { byFact: Map<string, Fact[]>; orphans: Fact[] } {
  const currentIds = new Set(current.map((f) => f.id));
  const next = new Map(superseded.map((f) => [f.id, f.supersededBy]));
  const byFact = new Map<string, Fact[]>();
  const orphans: Fact[] = [];
  for (const fact of superseded) {
    let at = fact.supersededBy;
    for (let hops = 0; at && !currentIds.has(at) && hops < superseded.length; hops++) at = next.get(at) ?? null;
    if (at && currentIds.has(at)) byFact.set(at, [...(byFact.get(at) ?? []), fact]);
    else orphans.push(fact);
  }
  return { byFact, orphans };
}

function Provenance({ fact, timeZone }: { fact: Fact; timeZone: string }) {
  const at = fact.source?.at ?? fact.toldAt;
  return (
    <p className="muted source">
      {fact.origin === "correction" ? "Corrected by you" : fact.source ? `From ${channelName(fact.source.kind)}` : "Learned"} ·{" "}
      <time dateTime={at} title={formatFull(at, timeZone)}>
        {formatWhen(at, timeZone)}
      </time>
      {fact.source?.excerpt && <> · “{fact.source.excerpt}”</>}
    </p>
  );
}

function Confidence({ value }: { value: number }) {
  const percent = Math.round(value * 100);
  return (
    <span className={percent < 60 ? "badge warn" : "badge"} title="How sure Soma is">
      {percent}% sure
    </span>
  );
}

function CorrectForm({ fact, onDone, onCancel }: { fact: Fact; onDone: () => void; onCancel: () => void }) {
  const [statement, setStatement] = useState(fact.statement);
  const [category, setCategory] = useState(fact.category);
  const state = useSaving();
  const form = useRef<HTMLFormElement>(null);
  useTelegramForm(form, {
    label: "Save correction",
    unsaved: statement !== fact.statement || category !== fact.category,
    saving: state.saving,
  });
  const save = (event: FormEvent) => {
    event.preventDefault();
    void state.save(async () => {
      // The select offers the fact's own category too: should the server no longer accept it, its 400 says so.
      await api.correctFact(fact.id, { statement: statement.trim(), category: category as FactCategory });
      onDone();
    });
  };
  return (
    <form className="edit-form" ref={form} onSubmit={save} aria-label={`Correct “${fact.statement}”`}>
      <label>
        What is true
        {/* biome-ignore lint/a11y/noAutofocus: the form opens when the person clicks Correct; the field they came to edit takes the focus. */}
        <input value={statement} onChange={(e) => setStatement(e.target.value)} required minLength={3} maxLength={300} autoFocus />
      </label>
      <label>
        Category
        <select value={category} onChange={(e) => setCategory(e.target.value)}>
          {[...new Set([...FACT_CATEGORIES, fact.category])].map((c) => (
            <option key={c} value={c}>
              {c}
            </option>
          ))}
        </select>
      </label>
      <p className="muted hint">The old fact is kept as history.</p>
      <ErrorNote message={state.error} />
      <FormActions saving={state.saving} saveLabel="Save correction" onCancel={onCancel} />
    </form>
  );
}

function FactItem({
  fact,
  history,
  timeZone,
  onChanged,
}: {
  fact: Fact;
  history: Fact[];
  timeZone: string;
  onChanged: (message: string) => void;
}) {
  const [mode, setMode] = useState<"view" | "correct" | "confirm-delete" | "deleting">("view");
  const [error, setError] = useState<string | null>(null);
  const remove = async () => {
    setMode("deleting");
    try {
      await api.deleteFact(fact.id);
      onChanged(`Deleted “${fact.statement}”.`);
    } catch (failure) {
      setMode("view");
      setError(`Could not delete it: ${(failure as Error).message}`);
    }
  };
  return (
    <li data-testid="fact" className="fact">
      <div className="fact-main">
        <strong className="fact-statement">{fact.statement}</strong>
        {fact.happenedAt && (
          <span className="muted">
            {" "}
            since <time dateTime={fact.happenedAt}>{formatDay(fact.happenedAt, timeZone)}</time>
          </span>
        )}{" "}
        <Confidence value={fact.confidence} />
        <Provenance fact={fact} timeZone={timeZone} />
      </div>
      {mode === "correct" ? (
        <CorrectForm fact={fact} onCancel={() => setMode("view")} onDone={() => onChanged(`Corrected “${fact.statement}”.`)} />
      ) : mode === "view" ? (
        <div className="actions">
          <button
            type="button"
            className="secondary"
            onClick={() => {
              setError(null);
              setMode("correct");
            }}
            aria-label={`Correct “${fact.statement}”`}
          >
            Correct
          </button>
          <button
            type="button"
            className="secondary"
            onClick={() => {
              setError(null);
              setMode("confirm-delete");
            }}
            aria-label={`Delete “${fact.statement}”`}
          >
            Delete
          </button>
        </div>
      ) : (
        <Confirm
          label="Confirm deletion"
          busy={mode === "deleting"}
          confirmLabel="Delete for good"
          busyLabel="Deleting…"
          onConfirm={() => void remove()}
          onKeep={() => setMode("view")}
        >
          Delete this fact{history.length > 0 ? " and its history" : ""}? Soma will no longer know it.
        </Confirm>
      )}
      <ErrorNote message={error} />
      {history.length > 0 && <History facts={history} timeZone={timeZone} label={`Earlier (${history.length})`} />}
    </li>
  );
}

function History({ facts, timeZone, label }: { facts: Fact[]; timeZone: string; label: string }) {
  return (
    <details className="history">
      <summary>{label}</summary>
      <ul className="plain-list" aria-label="Superseded facts">
        {facts.map((old) => (
          <li key={old.id}>
            <s>{old.statement}</s> <span className="muted">· replaced {formatWhen(old.updatedAt, timeZone)}</span>
            <Provenance fact={old} timeZone={timeZone} />
          </li>
        ))}
      </ul>
    </details>
  );
}

export function FactsPage({ timeZone }: { timeZone: string }) {
  const { loaded, reload, refresh } = useLoaded(api.facts);
  const [notice, setNotice] = useState<string | null>(null);
  const changed = (message: string) => {
    setNotice(message);
    refresh();
  };

  if (loaded.state !== "ready")
    return (
      <section className="facts" aria-label="Facts">
        <LoadState loaded={loaded} what="facts" onRetry={reload} />
      </section>
    );
  const { byFact, orphans } = historyByFact(loaded.current, loaded.superseded);
  const categories = [...new Set(loaded.current.map((f) => f.category))].sort(
    (a, b) => (FACT_CATEGORIES.indexOf(a as never) + 1 || 99) - (FACT_CATEGORIES.indexOf(b as never) + 1 || 99),
  );
  return (
    <section className="facts" aria-label="Facts">
      <p className="muted lead-in">
        What Soma believes about you, learned from what you said. Correct what is wrong; delete what it should not know.
      </p>
      {notice && (
        <div className="toast" role="status">
          <span>{notice}</span>
          <button type="button" className="secondary" aria-label="Dismiss" onClick={() => setNotice(null)}>
            ×
          </button>
        </div>
      )}
      {loaded.current.length === 0 && (
        <p className="muted empty">Soma does not know anything about you yet. Facts appear as you tell it about yourself in the chat.</p>
      )}
      {categories.map((category) => (
        <section key={category} aria-labelledby={`facts-${category}`}>
          <h2 id={`facts-${category}`} className="category">
            {category}
          </h2>
          <ul className="memory-list fact-list" aria-label={`${category} facts`}>
            {loaded.current
              .filter((f) => f.category === category)
              .map((fact) => (
                <FactItem key={fact.id} fact={fact} history={byFact.get(fact.id) ?? []} timeZone={timeZone} onChanged={changed} />
              ))}
          </ul>
        </section>
      ))}
      {orphans.length > 0 && (
        <>
          <h2>Other history</h2>
          <History facts={orphans} timeZone={timeZone} label={`Superseded facts (${orphans.length})`} />
        </>
      )}
    </section>
  );
}
