// Client-side routes of /app: the History API and one custom event, no router library. Every page is
// the same index.html on the Worker, so a reload or a shared link lands on the same page.
import { useEffect, useState, type AnchorHTMLAttributes, type MouseEvent } from "react";

const CHANGE = "soma:navigate";

export interface Location {
  path: string;
  search: URLSearchParams;
}

function current(): Location {
  return { path: window.location.pathname.replace(/\/$/, "") || "/app", search: new URLSearchParams(window.location.search) };
}

/** Goes to `to` (a path with an optional query); `replace` for filter changes that should not pile up in history. */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (options.replace) window.history.replaceState(null, "", to);
  else window.history.pushState(null, "", to);
  window.dispatchEvent(new Event(CHANGE));
  if (!options.replace) window.scrollTo({ top: 0 });
}

/** The current path and query, updated on navigate() and on back/forward. */
export function useLocation(): Location {
  const [location, setLocation] = useState(current);
  useEffect(() => {
    const update = () => setLocation(current());
    window.addEventListener("popstate", update);
    window.addEventListener(CHANGE, update);
    return () => {
      window.removeEventListener("popstate", update);
      window.removeEventListener(CHANGE, update);
    };
  }, []);
  return location;
}

/** An ordinary link (open in a new tab works) that navigates in place on a plain click. */
export function Link({ to, onClick, ...rest }: { to: string } & AnchorHTMLAttributes<HTMLAnchorElement>) {
  const follow = (event: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(event);
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  };
  return <a href={to} onClick={follow} {...rest} />;
}

/** Where a memory's page is (a query on /app/memories: the Worker serves that path with the session). */
export function memoryPath(id: string): string {
  return `/app/memories?memory=${encodeURIComponent(id)}`;
}
