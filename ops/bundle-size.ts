// `npm run bundle:check`: builds the production bundle exactly as a deploy would (`wrangler deploy
// --dry-run --outdir`), gzips every module (source maps aside) and fails above the limit (3 MiB
// gzipped; Workers on the paid plan allow 10 MiB, but startup time grows with size, so we keep it small).
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { gzipSync } from "node:zlib";
import { parseArgs } from "node:util";
import { loadSettings, runMain } from "./cli";
import { wranglerOk } from "./wrangler";

export const BUNDLE_LIMIT_BYTES = 3 * 1024 * 1024;

export interface BundleSize {
  files: Array<{ name: string; bytes: number; gzipBytes: number }>;
  bytes: number;
  gzipBytes: number;
}

export async function measureBundle(log: (line: string) => void = () => {}): Promise<BundleSize> {
  const outdir = mkdtempSync(`${tmpdir()}/soma-bundle-`);
  try {
    await wranglerOk(loadSettings({}), ["deploy", "--dry-run", "--outdir", outdir], { echo: () => {} });
    const files = readdirSync(outdir, { recursive: true, encoding: "utf8" })
      .filter((name) => !name.endsWith(".map") && !name.endsWith("README.md") && statSync(`${outdir}/${name}`).isFile())
      .map((name) => {
        const content = readFileSync(`${outdir}/${name}`);
        return { name, bytes: content.length, gzipBytes: gzipSync(content, { level: 9 }).length };
      });
    const size = { files, bytes: files.reduce((n, f) => n + f.bytes, 0), gzipBytes: files.reduce((n, f) => n + f.gzipBytes, 0) };
    for (const f of files) log(`bundle  ${f.name}  ${kib(f.bytes)} (${kib(f.gzipBytes)} gzipped)`);
    return size;
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

export function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KiB`;
}

runMain(import.meta, async () => {
  const { values } = parseArgs({ options: { "limit-bytes": { type: "string" } } });
  const limit = values["limit-bytes"] ? Number(values["limit-bytes"]) : BUNDLE_LIMIT_BYTES;
  const size = await measureBundle(console.log);
  const within = size.gzipBytes <= limit;
  console.log(`bundle  total ${kib(size.bytes)}, ${kib(size.gzipBytes)} gzipped — ${within ? "within" : "OVER"} the ${kib(limit)} limit`);
  return within ? 0 : 1;
});
