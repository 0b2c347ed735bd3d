// Runs wrangler for the operations commands: the project's own wrangler (WRANGLER_BIN replaces it,
// which is how the tests run the commands against a stand-in), Cloudflare credentials from the
// settings, output streamed to the operator, and wrangler's machine-readable output file
// (WRANGLER_OUTPUT_FILE_PATH: one JSON object per line, e.g. {type: "deploy", version_id}) parsed.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { root, type Settings } from "./cli";

export interface WranglerRun {
  code: number;
  stdout: string;
  stderr: string;
  /** Entries of wrangler's output file ({type: "deploy" | "version-upload" | "version-deploy", …}). */
  outputs: Array<Record<string, unknown>>;
}

export interface WranglerOptions {
  /** Written to wrangler's stdin (secret bulk), never logged. */
  input?: string;
  /** Echo wrangler's output lines (default true). */
  echo?: (line: string) => void;
}

export async function wrangler(settings: Settings, args: string[], options: WranglerOptions = {}): Promise<WranglerRun> {
  const bin = settings.WRANGLER_BIN ?? `${root}node_modules/.bin/wrangler`;
  const dir = mkdtempSync(`${tmpdir()}/soma-wrangler-`);
  const outputFile = `${dir}/output.ndjson`;
  const env: NodeJS.ProcessEnv = { ...process.env, WRANGLER_OUTPUT_FILE_PATH: outputFile, WRANGLER_SEND_METRICS: "false" };
  for (const key of ["CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_TOKEN"]) if (settings[key]) env[key] = settings[key];
  try {
    const child = spawn(bin, args, { cwd: root, env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const echo = options.echo ?? ((line: string) => console.log(`  wrangler │ ${line}`));
    const lines = (chunk: Buffer, into: "out" | "err") => {
      const text = chunk.toString("utf8");
      if (into === "out") stdout += text;
      else stderr += text;
      for (const line of text.split(/\r?\n/)) if (line.trim()) echo(line);
    };
    child.stdout.on("data", (c: Buffer) => lines(c, "out"));
    child.stderr.on("data", (c: Buffer) => lines(c, "err"));
    child.stdin.end(options.input ?? "");
    const code = await new Promise<number>((resolve, reject) => {
      child.on("error", reject);
      child.on("close", (exit) => resolve(exit ?? 1));
    });
    let outputs: Array<Record<string, unknown>> = [];
    try {
      outputs = readFileSync(outputFile, "utf8")
        .split("\n")
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    } catch {
      // no output file: the command wrote none (or failed before)
    }
    return { code, stdout, stderr, outputs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs wrangler and fails with its exit code and last error line unless it succeeded. */
export async function wranglerOk(settings: Settings, args: string[], options: WranglerOptions = {}): Promise<WranglerRun> {
  const run = await wrangler(settings, args, options);
  if (run.code !== 0) {
    const last = `${run.stderr}\n${run.stdout}`.trim().split("\n").filter(Boolean).at(-1) ?? "";
    const command = args
      .slice(
        0,
        Math.max(
          1,
          args.findIndex((a) => a.startsWith("-")),
        ),
      )
      .slice(0, 2)
      .join(" ");
    throw new Error(`wrangler ${command} failed (exit ${run.code}): ${last}`.replace(/\s+/g, " "));
  }
  return run;
}

export interface Deployment {
  id: string;
  created_on: string;
  versions: Array<{ version_id: string; percentage: number }>;
  annotations?: Record<string, string>;
}

/** What serves traffic now, or null before the first deploy. */
export async function currentDeployment(settings: Settings): Promise<Deployment | null> {
  const run = await wrangler(settings, ["deployments", "status", "--json"], { echo: () => {} });
  if (run.code !== 0) return null;
  try {
    return JSON.parse(run.stdout) as Deployment;
  } catch {
    return null;
  }
}

/** The version carrying most of the traffic. */
export function mainVersion(deployment: Deployment | null): string | null {
  if (!deployment?.versions.length) return null;
  return [...deployment.versions].sort((a, b) => b.percentage - a.percentage)[0]!.version_id;
}
