// The installed app: the service worker (web/public/sw.js, one per build: __SOMA_BUILD__) and whether
// the browser is online, for the shell's offline notice.
import { useEffect, useState } from "react";

declare const __SOMA_BUILD__: string;

/** Registers the service worker once the page has loaded (never in the way of the first paint). */
export function registerServiceWorker(): void {
  if (!("serviceWorker" in navigator) || !window.isSecureContext) return;
  const register = () =>
    navigator.serviceWorker.register(`/sw.js?build=${__SOMA_BUILD__}`, { scope: "/" }).catch(() => {
      // Without it the app works as before, only not offline; nothing to tell the person.
    });
  if (document.readyState === "complete") void register();
  else window.addEventListener("load", () => void register(), { once: true });
}

/** Whether the browser says it is online, as it changes. */
export function useOnline(): boolean {
  const [online, setOnline] = useState(() => navigator.onLine);
  useEffect(() => {
    const update = () => setOnline(navigator.onLine);
    window.addEventListener("online", update);
    window.addEventListener("offline", update);
    return () => {
      window.removeEventListener("online", update);
      window.removeEventListener("offline", update);
    };
  }, []);
  return online;
}
