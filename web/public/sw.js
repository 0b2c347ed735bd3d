// Soma's service worker: the installed app's shell offline, and the notifications Soma pushes.
//
// Offline: the app's built files (listed at build time in /precache.json) and the last app page the
// person opened are kept in one cache per build. A page opened offline is that shell, which says it is
// offline and loads nothing (web/src/main.tsx); the API is never cached, so nothing stale is shown as
// live. Online, pages always come from the network (the Worker checks the session first).
//
// Push: a push's payload is a JSON notification (agents/integrations/web-push.ts): title, body, a tag
// (a newer notification of the same thing replaces the older one) and the URL a tap opens.
const BUILD = new URL(self.location.href).searchParams.get("build") ?? "dev";
const CACHE = `soma-shell-${BUILD}`;
const SHELL = "/app";

self.addEventListener("install", (event) => {
  event.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      const listed = await fetch("/precache.json", { cache: "no-cache" }).then((r) => (r.ok ? r.json() : []));
      await cache.addAll(listed);
      // The page itself, when the person is signed in (a signed-out visitor is redirected to /login).
      const shell = await fetch(SHELL, { credentials: "same-origin", redirect: "manual" }).catch(() => null);
      if (shell?.ok && shell.headers.get("content-type")?.startsWith("text/html")) await cache.put(SHELL, shell);
      await self.skipWaiting();
    })(),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) if (name.startsWith("soma-shell-") && name !== CACHE) await caches.delete(name);
      await self.clients.claim();
    })(),
  );
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== "GET" || url.origin !== self.location.origin) return;
  if (request.mode === "navigate" && (url.pathname === "/app" || url.pathname.startsWith("/app/"))) {
    event.respondWith(page(request));
    return;
  }
  if (url.pathname.startsWith("/assets/") || url.pathname.startsWith("/icons/")) event.respondWith(kept(request));
  else if (FRESH.has(url.pathname)) event.respondWith(fresh(request));
});

/** Files whose names stay the same from build to build: from the network while there is one. */
const FRESH = new Set(["/styles.css", "/favicon.svg", "/manifest.webmanifest"]);

async function fresh(request) {
  try {
    return await fetch(request);
  } catch (error) {
    const hit = await caches.match(request, { cacheName: CACHE });
    if (hit) return hit;
    throw error;
  }
}

/** An app page from the network (kept as the shell), or the kept shell when the network is gone. */
async function page(request) {
  try {
    const response = await fetch(request);
    if (response.ok && !response.redirected) {
      const cache = await caches.open(CACHE);
      await cache.put(SHELL, response.clone());
    }
    return response;
  } catch (error) {
    const shell = await caches.match(SHELL, { cacheName: CACHE });
    if (shell) return shell;
    throw error;
  }
}

/** A built file (its name changes with its content): from the cache, else from the network and kept. */
async function kept(request) {
  const cache = await caches.open(CACHE);
  const hit = await cache.match(request);
  if (hit) return hit;
  const response = await fetch(request);
  if (response.ok) await cache.put(request, response.clone());
  return response;
}

self.addEventListener("push", (event) => {
  let message = {};
  try {
    message = event.data ? event.data.json() : {};
  } catch {
    message = { body: event.data ? event.data.text() : "" };
  }
  const title = typeof message.title === "string" && message.title ? message.title : "Soma";
  event.waitUntil(
    self.registration.showNotification(title, {
      body: typeof message.body === "string" ? message.body : "",
      tag: typeof message.tag === "string" ? message.tag : undefined,
      icon: "/icons/icon-192.png",
      badge: "/icons/icon-192.png",
      timestamp: typeof message.at === "string" ? Date.parse(message.at) : Date.now(),
      data: { url: typeof message.url === "string" && message.url.startsWith("/app") ? message.url : "/app" },
    }),
  );
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  event.waitUntil(openNotice(event.notification.data?.url));
});

/**
 * The page a notice names (within /app), in a window of Soma already open if there is one — brought
 * forward and taken there — else in a new one. A window that cannot be focused is still taken there.
 */
async function openNotice(url) {
  const target = new URL(typeof url === "string" && url.startsWith("/app") ? url : "/app", self.location.origin).href;
  const open = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  const same = open.find((client) => client.url === target) ?? open.find((client) => new URL(client.url).pathname.startsWith("/app"));
  if (!same) return self.clients.openWindow(target);
  if (same.url !== target && "navigate" in same) await same.navigate(target);
  await same.focus().catch(() => {});
}
