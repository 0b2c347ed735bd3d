// `npm run docs:build`: renders docs/*.md to a static site in docs/dist (one HTML page per document,
// links between documents rewritten to .html, one stylesheet), ready for any static host.
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { Marked } from "marked";
import { root, runMain } from "./cli";

const STYLE = `
:root { color-scheme: light dark; --fg: #1d1f23; --bg: #fbfbfa; --muted: #5b6068; --line: #e2e2de; --accent: #3b5bdb; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e6e3; --bg: #15171a; --muted: #a0a4ab; --line: #2c2f34; --accent: #8ea4ff; } }
body { margin: 0; font: 16px/1.6 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header { border-bottom: 1px solid var(--line); padding: 0.8rem 1.5rem; display: flex; gap: 1.2rem; align-items: baseline; }
header strong { font-size: 1.1rem; }
header a { color: var(--muted); text-decoration: none; } header a[aria-current] { color: var(--fg); font-weight: 600; }
main { max-width: 52rem; margin: 0 auto; padding: 1.5rem; }
a { color: var(--accent); }
pre, code { font: 0.9em/1.5 ui-monospace, monospace; } pre { overflow-x: auto; padding: 0.8rem; border: 1px solid var(--line); border-radius: 6px; }
table { border-collapse: collapse; width: 100%; display: block; overflow-x: auto; } th, td { border: 1px solid var(--line); padding: 0.35rem 0.6rem; text-align: left; vertical-align: top; }
`;

export interface BuiltPage {
  file: string;
  title: string;
}

export function buildDocs(options: { source?: string; out?: string } = {}): BuiltPage[] {
  const source = options.source ?? `${root}docs`;
  const out = options.out ?? `${source}/dist`;
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const documents = readdirSync(source)
    .filter((f) => f.endsWith(".md"))
    .sort((a, b) => (a === "index.md" ? -1 : b === "index.md" ? 1 : a.localeCompare(b)));
  const pages = documents.map((file) => {
    const text = readFileSync(`${source}/${file}`, "utf8");
    return { file: file.replace(/\.md$/, ".html"), title: /^#\s+(.+)$/m.exec(text)?.[1]?.trim() ?? file, text };
  });
  const marked = new Marked({ gfm: true });
  marked.use({
    renderer: {
      link({ href, tokens }) {
        const target = /^[\w-]+\.md(#.*)?$/.test(href) ? href.replace(/\.md/, ".html") : href;
        return `<a href="${escapeAttribute(target)}">${this.parser.parseInline(tokens)}</a>`;
      },
    },
  });
  for (const page of pages) {
    const nav = pages
      .map((p) => `<a href="${p.file}"${p.file === page.file ? ' aria-current="page"' : ""}>${escapeHtml(p.title)}</a>`)
      .join("");
    const body = marked.parse(page.text, { async: false });
    writeFileSync(
      `${out}/${page.file}`,
      `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(page.title)} · Soma docs</title>
<link rel="icon" href="favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="style.css">
</head>
<body>
<header><strong>Soma docs</strong>${nav}</header>
<main>
${body}
</main>
</body>
</html>
`,
    );
  }
  writeFileSync(`${out}/style.css`, STYLE.trimStart());
  copyFileSync(`${root}web/public/favicon.svg`, `${out}/favicon.svg`);
  return pages.map(({ file, title }) => ({ file, title }));
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function escapeAttribute(text: string): string {
  return escapeHtml(text).replace(/"/g, "&quot;");
}

runMain(import.meta, async () => {
  const { values } = parseArgs({ options: { out: { type: "string" } } });
  const pages = buildDocs(values.out ? { out: values.out } : {});
  for (const page of pages) console.log(`docs  ${page.file}  ${page.title}`);
  console.log(`docs  ${pages.length} pages in ${values.out ?? "docs/dist"}`);
  return 0;
});
