import { defineConfig } from "vite";

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
});
