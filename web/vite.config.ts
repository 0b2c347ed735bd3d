import { defineConfig, type Plugin } from "vite";

/** Each build's id: the service worker's cache is per build, so a deploy replaces the offline shell. */
const BUILD = Date.now().toString(36);

/**
 * precache.json: what the service worker (web/public/sw.js) keeps for the installed app's offline
 * shell — every built file (each page's chunk too, so a page opened offline says it is offline
 * instead of failing to load) and the files of web/public it shows.
 */
function precacheList(): Plugin {
  return {
    name: "soma-precache",
    generateBundle(_options, bundle) {
      const built = Object.keys(bundle)
        .filter((file) => file.startsWith("assets/"))
        .map((file) => `/${file}`);
      const shown = ["/styles.css", "/favicon.svg", "/manifest.webmanifest", "/icons/icon-192.png", "/icons/icon-512.png"];
      this.emitFile({ type: "asset", fileName: "precache.json", source: JSON.stringify([...built, ...shown].sort()) });
    },
  };
}

// The web app: React, built into web/dist, served by the Worker's static assets. /app and its pages
// are index.html (the Worker checks the session first); /login is server-rendered by the Worker.
export default defineConfig({
  root: "web",
  publicDir: "public",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: false,
    rolldownOptions: {
      // A dependency's "use client" (swr's) marks a React Server Components boundary; this app has no
      // server components, so the bundler dropping it changes nothing. Every other warning still shows.
      onwarn(warning, warn) {
        if (warning.code === "MODULE_LEVEL_DIRECTIVE" && warning.message.includes('"use client"')) return;
        warn(warning);
      },
    },
  },
  oxc: { jsx: { runtime: "automatic" } },
  define: { __SOMA_BUILD__: JSON.stringify(BUILD) },
  plugins: [precacheList()],
});
