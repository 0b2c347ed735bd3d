// Client-side routes of /app: the History API and one custom event, no router library. Every page is
// the same index.html on the Worker, so a reload or a shared link lands on the same page.
// Inside Telegram the same pages live under /tg (the Mini App, worker/routes/mini-app.ts): the pages
// keep speaking of /app paths, and the address bar shows /tg ones. Each entry of the history records
// how deep it is, so the Mini App knows when Telegram's back button has somewhere to go.
import { useEffect, useState, type AnchorHTMLAttributes, type MouseEvent } from "react";

export const CHANGE = "soma:navigate";

/** True on the Mini App's pages (/tg, /tg/…), opened inside Telegram. */
export const IN_MINI_APP = /^\/tg(\/|$)/.test(window.location.pathname);

export interface Location {
  path: string;
  search: URLSearchParams;
}

function current(): Location {
  const path = window.location.pathname.replace(/\/$/, "") || "/app";
  // The Mini App opens on memories: the chat is Telegram's own.
  const app = IN_MINI_APP ? (path === "/tg" ? "/app/memories" : path.replace(/^\/tg/, "/app")) : path;
  return { path: app, search: new URLSearchParams(window.location.search) };
}

/** Where a page's /app path is in the address bar: itself, or under /tg inside Telegram. */
export function href(to: string): string {
  return IN_MINI_APP ? to.replace(/^\/app(?=\/|\?|$)/, "/tg") : to;
}

/** How many steps back within the app the current page is (0 on the page it opened on). */
export function historyDepth(): number {
  const state = window.history.state as { depth?: unknown } | null;
  return typeof state?.depth === "number" ? state.depth : 0;
}

/** Goes to `to` (a path with an optional query); `replace` for filter changes that should not pile up in history. */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const depth = historyDepth();
  if (options.replace) window.history.replaceState({ depth }, "", href(to));
  else window.history.pushState({ depth: depth + 1 }, "", href(to));
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
  return <a href={href(to)} onClick={follow} {...rest} />;
}

/** Where a memory's page is (a query on /app/memories: the Worker serves that path with the session). */
export function memoryPath(id: string): string {
  return `/app/memories?memory=${encodeURIComponent(id)}`;
}
