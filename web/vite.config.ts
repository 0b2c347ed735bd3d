import { defineConfig } from "vite";

// The web app: React, built into web/dist, served by the Worker's static assets. /app and its pages
// are index.html (the Worker checks the session first); /login is server-rendered by the Worker.
export default defineConfig({
  root: "web",
  publicDir: "public",
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false },
  oxc: { jsx: { runtime: "automatic" } },
});
