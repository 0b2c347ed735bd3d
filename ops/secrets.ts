// `npm run secrets:check [-- --env-file F]`: the 25 secret names of .env.example, looked up in the
// environment and F; prints `filled N/25` and the missing names — never a value. Exit 0 only at 25/25.
// `npm run secrets:push -- --env-file F`: copies them to the Worker's secrets with `wrangler secret
// bulk` (values go through wrangler's stdin, never the command line or the terminal). Only what the
// Worker reads is pushed: DATABASE_URL and DATABASE_WORKER_PASSWORD stay with db:setup and Hyperdrive,
// CLOUDFLARE_* are deploy credentials.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { CONFIG_KEYS } from "../platform/config";
import { loadSettings, root, runMain, UsageError, type Settings } from "./cli";
import { wranglerOk } from "./wrangler";

/** The secret names, in .env.example's order (its uncommented KEY= lines). */
export function secretNames(): string[] {
  return readFileSync(`${root}.env.example`, "utf8")
    .split(/\r?\n/)
    .map((line) => /^([A-Z][A-Z0-9_]*)=/.exec(line)?.[1])
    .filter((name): name is string => Boolean(name));
}

/** The environment and the env file only (not the project's .env: this checks a production set). */
function secretSettings(environment: NodeJS.ProcessEnv, envFile: string | undefined): Settings {
  return loadSettings(environment, envFile, { projectEnv: false });
}

export function checkSecrets(environment: NodeJS.ProcessEnv, envFile?: string, log = console.log): { filled: number; total: number; missing: string[] } {
  const names = secretNames();
  const settings = secretSettings(environment, envFile);
  const missing = names.filter((n) => !settings[n]);
  const filled = names.length - missing.length;
  log(`filled ${filled}/${names.length}`);
  if (missing.length) log(`missing: ${missing.join(", ")}`);
  return { filled, total: names.length, missing };
}

export async function pushSecrets(environment: NodeJS.ProcessEnv, envFile: string, log = console.log): Promise<string[]> {
  const settings = secretSettings(environment, envFile);
  const runtime = secretNames().filter((n) => CONFIG_KEYS.includes(n) && settings[n]);
  if (runtime.length === 0) throw new UsageError(`no secrets to push in ${envFile}`);
  log(`secrets:push  ${runtime.length} secrets the Worker reads: ${runtime.join(", ")}`);
  const values = Object.fromEntries(runtime.map((n) => [n, settings[n]!]));
  await wranglerOk({ ...settings }, ["secret", "bulk"], { input: JSON.stringify(values), echo: (line) => log(`  wrangler │ ${redact(line, Object.values(values))}`) });
  log("secrets:push  done (values not shown)");
  return runtime;
}

/** Whatever wrangler prints, with any secret value masked (it should print none). */
function redact(line: string, values: string[]): string {
  return values.reduce((text, value) => (value.length >= 4 ? text.split(value).join("••••") : text), line);
}

runMain(import.meta, async () => {
  const { values, positionals } = parseArgs({ options: { "env-file": { type: "string" } }, allowPositionals: true });
  const envFile = values["env-file"];
  if (positionals[0] === "push") {
    if (!envFile) throw new UsageError("usage: npm run secrets:push -- --env-file <file>");
    await pushSecrets(process.env, envFile);
    return 0;
  }
  const { filled, total } = checkSecrets(process.env, envFile);
  return filled === total ? 0 : 1;
});
