// The person's memories: filter by type, search (recall), see where each came from, forget one.
import { useCallback, useEffect, useState } from "react";
import { api, type Memory } from "./api";

const TYPES = ["", "book", "movie", "place", "person", "project", "note"];

export function MemoriesPage() {
  const [type, setType] = useState("");
  const [query, setQuery] = useState("");
  const [memories, setMemories] = useState<Memory[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(() => {
    api.memories({ type, q: query }).then(setMemories, (e: Error) => setError(e.message));
  }, [type, query]);
  useEffect(load, [load]);

  const forget = async (memory: Memory) => {
    await api.forget(memory.id);
    load();
  };

  return (
    <section className="memories">
      <div className="filters">
        <input aria-label="Search memories" placeholder="Search…" value={query} onChange={(e) => setQuery(e.target.value)} />
        <select aria-label="Type" value={type} onChange={(e) => setType(e.target.value)}>
          {TYPES.map((t) => (
            <option key={t} value={t}>
              {t || "all types"}
            </option>
          ))}
        </select>
      </div>
      {error && <p className="error">{error}</p>}
      {memories?.length === 0 && <p className="muted">Nothing here yet.</p>}
      <ul className="memory-list">
        {memories?.map((memory) => (
          <li key={memory.id} data-testid="memory">
            <div>
              <strong>{memory.name}</strong> <span className="badge">{memory.type}</span>
              {memory.source?.excerpt && (
                <p className="muted source">
                  from {memory.source.kind}: “{memory.source.excerpt}”
                </p>
              )}
            </div>
            <button className="secondary" onClick={() => void forget(memory)} aria-label={`Forget ${memory.name}`}>
              Forget
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
