// `npm run docs:build` renders a self-contained static site; `npm run bundle:check` measures the
// production bundle as a deploy builds it and fails above its limit.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { BUNDLE_LIMIT_BYTES, measureBundle } from "../../ops/bundle-size";
import { buildDocs } from "../../ops/docs-build";

describe("npm run docs:build", () => {
  it("renders every document to HTML with working links between them and no external assets", () => {
    const out = mkdtempSync(`${tmpdir()}/soma-docs-`);
    const pages = buildDocs({ out });
    expect(pages.map((p) => p.file)).toEqual([
      "index.html",
      "architecture.html",
      "export.html",
      "mcp.html",
      "offline-model.html",
      "runbook.html",
    ]);
    for (const page of pages) {
      const html = readFileSync(`${out}/${page.file}`, "utf8");
      expect(html).toContain(`<title>${page.title} · Soma docs</title>`);
      const links = [...html.matchAll(/(?:href|src)="([^"#]+)/g)].map((m) => m[1]!).filter((l) => !/^https?:/.test(l));
      for (const link of links) expect(existsSync(`${out}/${link}`), `${page.file} → ${link}`).toBe(true);
      expect(html).not.toMatch(/\.md"/);
    }
    const runbook = readFileSync(`${out}/runbook.html`, "utf8");
    expect(runbook).toContain("<h2>First deploy, in the spec&#39;s order</h2>");
    expect(runbook).toMatch(/<table>[\s\S]*npm run deploy/);
  });
});

describe("npm run bundle:check", () => {
  it("builds the production bundle and stays under 3 MiB gzipped", async () => {
    const size = await measureBundle();
    expect(size.files.map((f) => f.name)).toContain("index.js");
    expect(size.gzipBytes).toBeGreaterThan(100_000);
    expect(size.gzipBytes).toBeLessThan(BUNDLE_LIMIT_BYTES);
    console.log(`bundle: ${(size.bytes / 1024).toFixed(0)} KiB, ${(size.gzipBytes / 1024).toFixed(0)} KiB gzipped`);
  });

  it("exits 1 when the bundle is over the limit", () => {
    const run = spawnSync("node_modules/.bin/tsx", ["ops/bundle-size.ts", "--limit-bytes", "1000"], { encoding: "utf8" });
    expect(run.status).toBe(1);
    expect(run.stdout).toMatch(/OVER the 1\.0 KiB limit/);
  });
});
