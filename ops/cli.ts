// What the operations commands share: their settings (the project's .env, then an --env-file, then
// the process environment), a result table, and the exit code convention (0 ok, 1 a check failed,
// 2 the command was used wrongly or a setting is missing).
import { fileURLToPath } from "node:url";
import { readEnvFile } from "./dotenv";

export const root = fileURLToPath(new URL("..", import.meta.url));

export type Settings = Record<string, string>;

/** Where `npm start` keeps its state (the embedded database, its secrets): SOMA_STATE_DIR, else .soma. */
export const stateDirOf = (settings: Settings) => settings.SOMA_STATE_DIR ?? `${root}.soma`;

/**
 * .env, then `envFile`, then the environment (later wins); empty values count as unset. Without
 * `projectEnv` the project's .env is left out (checks of a production set).
 */
export function loadSettings(environment: NodeJS.ProcessEnv, envFile?: string, { projectEnv = true } = {}): Settings {
  const settings: Settings = {};
  const sources = [projectEnv ? readEnvFile(`${root}.env`) : {}, envFile ? readEnvFile(envFile) : {}, environment];
  for (const source of sources) for (const [key, value] of Object.entries(source)) if (value?.trim()) settings[key] = value;
  return settings;
}

export class UsageError extends Error {
  readonly exitCode = 2;
}

/** Fails with a clear message when `names` are not all set. */
export function requireSettings<K extends string>(settings: Settings, names: readonly K[], command: string): Record<K, string> {
  const missing = names.filter((n) => !settings[n]);
  if (missing.length) throw new UsageError(`${command} needs ${missing.join(", ")}`);
  return Object.fromEntries(names.map((n) => [n, settings[n]!])) as Record<K, string>;
}

export interface Row {
  check: string;
  ok: boolean;
  detail: string;
}

/** A fixed-width table of results. */
export function formatTable(rows: Row[]): string {
  const width = Math.max(5, ...rows.map((r) => r.check.length));
  const lines = [`${"check".padEnd(width)}  result  detail`, `${"-".repeat(width)}  ------  ------`];
  for (const r of rows) lines.push(`${r.check.padEnd(width)}  ${(r.ok ? "ok" : "FAIL").padEnd(6)}  ${r.detail}`);
  return lines.join("\n");
}

/** Runs `main` when this module is the process's entry point, mapping failures to exit codes. */
export function runMain(meta: ImportMeta, main: () => Promise<number>): void {
  if (!process.argv[1] || fileURLToPath(meta.url) !== process.argv[1]) return;
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : String(error));
      process.exit(error instanceof UsageError ? 2 : 1);
    },
  );
}
