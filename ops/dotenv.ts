// A small .env reader: KEY=VALUE lines, # comments, optional quotes. Enough for .env and .env.example.
import { existsSync, readFileSync } from "node:fs";

export function readEnvFile(path: string): Record<string, string> {
  if (!existsSync(path)) return {};
  const values: Record<string, string> = {};
  for (const line of readFileSync(path, "utf8").split(/\r?\n/)) {
    const match = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!match) continue;
    const [, key, raw = ""] = match;
    values[key!] = /^(["']).*\1$/.test(raw) ? raw.slice(1, -1) : raw.replace(/\s+#.*$/, "");
  }
  return values;
}

/** Writes KEY=VALUE lines (values quoted) for wrangler's --env-file. */
export function formatEnvFile(values: Record<string, string>): string {
  const lines = Object.entries(values).map(([key, value]) => `${key}=${JSON.stringify(value)}`);
  return `${lines.join("\n")}\n`;
}
