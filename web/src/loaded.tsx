// A page's data as it loads: loading, failed (with a retry), or ready. One hook and one view for the
// pages that fetch one list (Facts, Reminders).
import { useEffect, useState, type ReactNode } from "react";

export type Loaded<T> = { state: "loading" } | { state: "error"; message: string } | ({ state: "ready" } & T);

/** Loads with `load` on mount and on each reload; `refresh` reloads without showing the loading state. */
export function useLoaded<T extends object>(load: () => Promise<T>) {
  const [loaded, setLoaded] = useState<Loaded<T>>({ state: "loading" });
  const [reloads, setReloads] = useState(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `load` is the page's own fetch (a new function each render); reloading is what `reloads` asks for.
  useEffect(() => {
    let current = true;
    load().then(
      (value) => current && setLoaded({ state: "ready", ...value }),
      (error: Error) => current && setLoaded({ state: "error", message: error.message }),
    );
    return () => {
      current = false;
    };
  }, [reloads]);
  const refresh = () => setReloads((n) => n + 1);
  const reload = () => {
    setLoaded({ state: "loading" });
    refresh();
  };
  return { loaded, setLoaded, reload, refresh };
}

/** The loading and error states of a page (null once ready): `what` names the data ("facts"). */
export function LoadState({ loaded, what, onRetry }: { loaded: Loaded<object>; what: string; onRetry: () => void }): ReactNode {
  if (loaded.state === "loading")
    return (
      <p className="muted" role="status">
        Loading {what}…
      </p>
    );
  if (loaded.state === "error")
    return (
      <div className="error-box" role="alert">
        <p className="error">
          {what[0]!.toUpperCase() + what.slice(1)} could not be loaded: {loaded.message}
        </p>
        <button type="button" className="secondary" onClick={onRetry}>
          Try again
        </button>
      </div>
    );
  return null;
}
