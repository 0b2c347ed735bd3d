// The person's memories: search (recall), filter by type and by when they happened (else were told), newest first
// a page at a time; each opens its own page. Forgetting one can be undone. The filters live in the
// query string, so back from a memory's page returns to the same list.
import { useCallback, useEffect, useState } from "react";
import { api, type Memory, type MemoryFilter } from "./api";
import { channelName, formatFull, formatWhen } from "./format";
import { ErrorNote } from "./forms";
import { Link, memoryPath, navigate, useLocation } from "./router";
import { UndoBar, useUndo } from "./undo";

const PAGE_SIZE = 50;
const RANGES = [
  { value: "", label: "Any time" },
  { value: "7d", label: "Past 7 days" },
  { value: "30d", label: "Past 30 days" },
  { value: "365d", label: "Past year" },
  { value: "custom", label: "Between dates…" },
] as const;

/** The API's filter for the query string's: a preset range counts back from now, dates are local days. */
function filterOf(search: URLSearchParams): MemoryFilter {
  const when = search.get("when") ?? "";
  const filter: MemoryFilter = { q: search.get("q") ?? "", type: search.get("type") ?? "" };
  const days = /^(\d+)d$/.exec(when)?.[1];
  if (days) filter.from = new Date(Date.now() - Number(days) * 86_400_000).toISOString();
  if (when === "custom") {
    const from = search.get("from");
    const to = search.get("to");
    if (from) filter.from = new Date(`${from}T00:00:00`).toISOString();
    // "until 5 March" includes the whole of 5 March.
    if (to) filter.to = new Date(new Date(`${to}T00:00:00`).getTime() + 86_400_000).toISOString();
  }
  return filter;
}

function setParam(search: URLSearchParams, changes: Record<string, string>) {
  const next = new URLSearchParams(search);
  for (const [key, value] of Object.entries(changes)) {
    if (value) next.set(key, value);
    else next.delete(key);
  }
  navigate(`/app/memories${next.size ? `?${next}` : ""}`, { replace: true });
}

type Listing =
  | { state: "loading" }
  | { state: "error"; message: string }
  | { state: "ready"; memories: Memory[]; nextCursor: string | null; more: "idle" | "loading" | string };

export function MemoriesPage({ timeZone }: { timeZone: string }) {
  const { search } = useLocation();
  const key = search.toString();
  const filter = filterOf(search);
  const [query, setQuery] = useState(filter.q ?? "");
  const [types, setTypes] = useState<Array<{ type: string; count: number }>>([]);
  const [listing, setListing] = useState<Listing>({ state: "loading" });
  const [reloads, setReloads] = useState(0);
  const undo = useUndo();

  // Typing searches after a pause, not on every key.
  useEffect(() => {
    if (query.trim() === (search.get("q") ?? "")) return;
    const timer = setTimeout(() => setParam(search, { q: query.trim() }), 300);
    return () => clearTimeout(timer);
  }, [query, search]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `reloads` is the reload trigger (the effect refetches when it changes).
  useEffect(() => {
    let current = true;
    setListing({ state: "loading" });
    api.memories({ ...filterOf(new URLSearchParams(key)), limit: PAGE_SIZE }).then(
      (page) => current && setListing({ state: "ready", ...page, more: "idle" }),
      (error: Error) => current && setListing({ state: "error", message: error.message }),
    );
    api.memoryTypes().then(
      (t) => current && setTypes(t),
      () => {},
    );
    return () => {
      current = false;
    };
  }, [key, reloads]);

  const loadMore = async () => {
    if (listing.state !== "ready" || !listing.nextCursor) return;
    setListing({ ...listing, more: "loading" });
    try {
      const page = await api.memories({ ...filter, cursor: listing.nextCursor, limit: PAGE_SIZE });
      setListing({ state: "ready", memories: [...listing.memories, ...page.memories], nextCursor: page.nextCursor, more: "idle" });
    } catch (error) {
      setListing({ ...listing, more: (error as Error).message });
    }
  };

  const reload = useCallback(() => setReloads((n) => n + 1), []);
  const forget = async (memory: Memory) => {
    try {
      await api.forget(memory.id);
      setListing((l) => (l.state === "ready" ? { ...l, memories: l.memories.filter((m) => m.id !== memory.id) } : l));
      undo.offer(`Forgot ${memory.name}.`, async () => {
        await api.restore(memory.id);
        reload();
      });
    } catch (error) {
      undo.fail(`Could not forget ${memory.name}: ${(error as Error).message}`);
    }
  };

  const when = search.get("when") ?? "";
  const filtered = Boolean(filter.q || filter.type || when);
  const typeOptions = [...new Set([...types.map((t) => t.type), ...(filter.type ? [filter.type] : [])])];
  return (
    <section className="memories" aria-label="Memories">
      <search>
        <form
          className="filters"
          onSubmit={(e) => {
            e.preventDefault();
            setParam(search, { q: query.trim() });
          }}
        >
          <input
            type="search"
            aria-label="Search memories"
            placeholder="Search…"
            value={query}
            onChange={(e) => setQuery(e.target.value)}
          />
          <select aria-label="Type" value={filter.type} onChange={(e) => setParam(search, { type: e.target.value })}>
            <option value="">All types</option>
            {typeOptions.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
          <select aria-label="When" value={when} onChange={(e) => setParam(search, { when: e.target.value, from: "", to: "" })}>
            {RANGES.map((r) => (
              <option key={r.value} value={r.value}>
                {r.label}
              </option>
            ))}
          </select>
        </form>
      </search>
      {when === "custom" && (
        <div className="filters dates">
          <label>
            From <input type="date" value={search.get("from") ?? ""} onChange={(e) => setParam(search, { from: e.target.value })} />
          </label>
          <label>
            Until <input type="date" value={search.get("to") ?? ""} onChange={(e) => setParam(search, { to: e.target.value })} />
          </label>
        </div>
      )}
      <UndoBar undo={undo} />
      {listing.state === "loading" && (
        <p className="muted" role="status">
          Loading memories…
        </p>
      )}
      {listing.state === "error" && (
        <div className="error-box" role="alert">
          <p className="error">Memories could not be loaded: {listing.message}</p>
          <button type="button" className="secondary" onClick={reload}>
            Try again
          </button>
        </div>
      )}
      {listing.state === "ready" && listing.memories.length === 0 && (
        <p className="muted empty">
          {filtered ? "No memories match these filters." : "Nothing here yet. Tell Soma about a book, a place or a person in the chat."}
        </p>
      )}
      {listing.state === "ready" && listing.memories.length > 0 && (
        <ul className="memory-list" aria-label={filter.q ? "Search results" : "Memories, newest first"}>
          {listing.memories.map((memory) => (
            <li key={memory.id} data-testid="memory">
              <div className="memory-main">
                <Link to={memoryPath(memory.id)} className="memory-name">
                  {memory.name}
                </Link>{" "}
                <span className="badge">{memory.type}</span>
                <p className="muted source">
                  <time dateTime={memory.createdAt} title={formatFull(memory.createdAt, timeZone)}>
                    {formatWhen(memory.createdAt, timeZone)}
                  </time>
                  {memory.source && <> · {channelName(memory.source.kind)}</>}
                  {memory.source?.excerpt && <> · “{memory.source.excerpt}”</>}
                </p>
              </div>
              <button type="button" className="secondary" onClick={() => void forget(memory)} aria-label={`Forget ${memory.name}`}>
                Forget
              </button>
            </li>
          ))}
        </ul>
      )}
      {listing.state === "ready" && listing.nextCursor && (
        <button type="button" className="secondary more" onClick={() => void loadMore()} disabled={listing.more === "loading"}>
          {listing.more === "loading" ? "Loading…" : "Show more"}
        </button>
      )}
      {listing.state === "ready" && listing.more !== "idle" && listing.more !== "loading" && (
        <ErrorNote message={`More could not be loaded: ${listing.more}`} />
      )}
    </section>
  );
}
