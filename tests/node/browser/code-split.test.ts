// Guards the web app's code splitting: the chat page (/app) loads without the Memories, memory, Facts,
// Reminders and Settings pages' code nor the Telegram Mini App's, no chunk grows past Vite's 500 kB warning, and the first load is measured.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webFirstLoad, type WebLoad } from "../../../ops/web-bundle";

// Text only each other page renders: if it is in the first load, so is that page's code.
const OTHER_PAGES = {
  memories: "No memories match these filters.",
  "memory-detail": "Where Soma learned it",
  facts: "Soma does not know anything about you yet.",
  reminders: "Nothing coming up.",
  settings: "Delete all my data",
  // The Mini App's sign-in and Telegram's bridge: only /tg pages load them.
  "mini-app": "web_app_request_safe_area",
};

const outDir = mkdtempSync(`${tmpdir()}/soma-web-dist-`);
let load: WebLoad;

beforeAll(async () => {
  // A build of its own: web/dist may be rebuilt by another run meanwhile. Vitest sets NODE_ENV=test,
  // which Vite would keep (React's development build); `npm run build:web` runs without it.
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = "production";
  await build({
    configFile: fileURLToPath(new URL("../../../web/vite.config.ts", import.meta.url)),
    build: { outDir, emptyOutDir: true },
    logLevel: "error",
  }).finally(() => (process.env.NODE_ENV = nodeEnv));
  load = webFirstLoad(outDir);
});
afterAll(() => rmSync(outDir, { recursive: true, force: true }));

describe("the chat page's first load", () => {
  it("is the entry, the stylesheet and the chat chunk, without the other pages' chunks or text", () => {
    const names = load.firstLoad.map((f) => f.name);
    expect(names).toEqual(
      expect.arrayContaining([
        "styles.css",
        expect.stringMatching(/^assets\/index-.*\.js$/),
        expect.stringMatching(/^assets\/chat-.*\.js$/),
      ]),
    );
    for (const [page, marker] of Object.entries(OTHER_PAGES)) {
      expect(
        names.some((name) => name.startsWith(`assets/${page}-`)),
        page,
      ).toBe(false);
      const holders = load.firstLoad.filter((f) => readFileSync(join(outDir, f.name), "utf8").includes(marker));
      expect(
        holders.map((f) => f.name),
        page,
      ).toEqual([]);
      // The page still exists, in a chunk of its own that loads on demand.
      const deferred = load.deferred.filter((f) => readFileSync(join(outDir, f.name), "utf8").includes(marker));
      expect(
        deferred.map((f) => f.name),
        page,
      ).toEqual([expect.stringMatching(new RegExp(`^assets/${page}-`))]);
    }
    expect(readFileSync(join(outDir, names.find((n) => n.includes("/chat-"))!), "utf8")).toContain("Connection lost. Reconnecting…");
  });

  it("has no chunk over 500 kB and stays under 170 KiB gzipped", () => {
    for (const file of [...load.firstLoad, ...load.deferred]) expect(file.bytes, file.name).toBeLessThan(500 * 1024);
    console.log(
      `chat page first load: ${(load.gzipBytes / 1024).toFixed(1)} KiB gzipped (${load.firstLoad.map((f) => f.name).join(", ")})`,
    );
    expect(load.gzipBytes).toBeLessThan(170 * 1024);
  });
});
