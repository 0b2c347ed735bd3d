// `npm run bundle:web`: builds the web app and reports its first load — the JavaScript and CSS a
// browser fetches to show the chat page (/app): index.html's script and stylesheets, the chat page's
// chunk (React.lazy in web/src/main.tsx), and every chunk those import statically. Gzipped sizes are
// what travels over the wire. The other pages' chunks load only when they are opened.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { runMain } from "./cli";
import { kib } from "./bundle-size";

export const WEB_DIST = fileURLToPath(new URL("../web/dist", import.meta.url));

export interface WebFile {
  name: string;
  bytes: number;
  gzipBytes: number;
}

export interface WebLoad {
  /** Files the chat page fetches before it can show the conversation, in discovery order. */
  firstLoad: WebFile[];
  /** Every other chunk: loaded when its page is opened. */
  deferred: WebFile[];
  gzipBytes: number;
}

function measure(dist: string, name: string): WebFile {
  const content = readFileSync(join(dist, name));
  return { name, bytes: content.length, gzipBytes: gzipSync(content, { level: 9 }).length };
}

/** Chunks a built module imports statically (`import … from"./x.js"`, `import"./x.js"`), as dist paths. */
function staticImports(dist: string, name: string): string[] {
  const code = readFileSync(join(dist, name), "utf8");
  const dir = name.includes("/") ? name.slice(0, name.lastIndexOf("/") + 1) : "";
  return [...code.matchAll(/(?:\bfrom\s*|\bimport\s*)["'`]\.\/([\w.-]+\.js)["'`]/g)].map((m) => `${dir}${m[1]}`);
}

/** The first load of the chat page from a built web/dist (see the header). */
export function webFirstLoad(dist = WEB_DIST): WebLoad {
  const html = readFileSync(join(dist, "index.html"), "utf8");
  const roots = [
    ...[...html.matchAll(/<script[^>]*\ssrc="\/([^"]+)"/g)].map((m) => m[1]!),
    ...[...html.matchAll(/<link[^>]*rel="(?:stylesheet|modulepreload)"[^>]*href="\/([^"]+)"/g)].map((m) => m[1]!),
  ];
  const entry = roots.find((name) => name.endsWith(".js"));
  if (!entry) throw new Error(`${dist}/index.html loads no script`);
  // The chat page is the entry's dynamic import of the chunk built from web/src/chat.tsx.
  const chat = /import\(\s*["'`]\.\/(chat-[\w-]+\.js)["'`]\s*\)/.exec(readFileSync(join(dist, entry), "utf8"))?.[1];
  if (!chat) throw new Error(`${entry} has no dynamic import of the chat page's chunk (is the chat page still React.lazy?)`);
  const seen = new Set<string>();
  const queue = [...roots, `${entry.slice(0, entry.lastIndexOf("/") + 1)}${chat}`];
  while (queue.length > 0) {
    const name = queue.shift()!;
    if (seen.has(name)) continue;
    seen.add(name);
    if (name.endsWith(".js")) queue.push(...staticImports(dist, name));
  }
  const firstLoad = [...seen].map((name) => measure(dist, name));
  const deferred = readdirSync(join(dist, "assets"))
    .map((file) => `assets/${file}`)
    .filter((name) => /\.(js|css)$/.test(name) && !seen.has(name))
    .map((name) => measure(dist, name));
  return { firstLoad, deferred, gzipBytes: firstLoad.reduce((n, f) => n + f.gzipBytes, 0) };
}

runMain(import.meta, async () => {
  const { values } = parseArgs({ options: { dist: { type: "string" } } });
  const load = webFirstLoad(values.dist ?? WEB_DIST);
  for (const f of load.firstLoad) console.log(`first load  ${f.name}  ${kib(f.bytes)} (${kib(f.gzipBytes)} gzipped)`);
  for (const f of load.deferred) console.log(`on demand   ${f.name}  ${kib(f.bytes)} (${kib(f.gzipBytes)} gzipped)`);
  console.log(`chat page first load: ${kib(load.firstLoad.reduce((n, f) => n + f.bytes, 0))}, ${kib(load.gzipBytes)} gzipped`);
  return 0;
});
