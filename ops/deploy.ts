// `npm run deploy`: a new Worker version at 100% (`wrangler deploy`), then PUT /api/workflows so
// Inngest re-syncs the functions, then smoke checks 1–5. If the smoke fails, the previous version is
// restored at once (`wrangler rollback`) and the command says so and exits 1.
// `npm run deploy -- --gradual 10`: uploads a version (`wrangler versions upload`) and sends it 10% of
// the traffic, the current version keeping the rest (`wrangler versions deploy`); a failed smoke puts
// the current version back to 100%.
import { execFileSync } from "node:child_process";
import { parseArgs } from "node:util";
import { loadSettings, requireSettings, root, runMain, UsageError, type Settings } from "./cli";
import { smoke } from "./smoke";
import { currentDeployment, mainVersion, wranglerOk } from "./wrangler";

export interface DeployOptions {
  /** Percentage of traffic for the new version (1–99); omitted: 100% at once. */
  gradual?: number;
  log?: (line: string) => void;
}

export async function deploy(settings: Settings, { gradual, log = console.log }: DeployOptions = {}): Promise<boolean> {
  const { APP_BASE_URL: base } = requireSettings(settings, ["APP_BASE_URL"], "deploy");
  if (gradual !== undefined && !(Number.isInteger(gradual) && gradual >= 1 && gradual <= 99))
    throw new UsageError("--gradual takes a percentage from 1 to 99");
  const previous = mainVersion(await currentDeployment(settings));
  const message = `soma ${revision()}`;
  log(`deploy  now serving: ${previous ?? "nothing yet (first deploy)"}`);

  let version: string;
  if (gradual === undefined) {
    const run = await wranglerOk(settings, ["deploy", "--message", message]);
    version = versionFrom(run.outputs, "deploy");
    log(`deploy  version ${version} serves 100% of traffic`);
  } else {
    const run = await wranglerOk(settings, ["versions", "upload", "--message", message]);
    version = versionFrom(run.outputs, "version-upload");
    const specs = previous ? [`${version}@${gradual}%`, `${previous}@${100 - gradual}%`] : [`${version}@100%`];
    await wranglerOk(settings, ["versions", "deploy", ...specs, "--message", `${message} (gradual ${gradual}%)`, "--yes"]);
    log(
      previous
        ? `deploy  version ${version} serves ${gradual}%, ${previous} keeps ${100 - gradual}%`
        : `deploy  version ${version} serves 100% (nothing to split with)`,
    );
  }

  const synced = await syncWorkflows(base, log);
  const { ok } = await smoke({ baseUrl: base, settings, checks: "1-5", log });
  if (ok) {
    log(
      synced
        ? `deploy  done: ${version}`
        : "deploy  deployed, but Inngest did not re-sync: run PUT /api/workflows again (npm run deploy is safe to repeat)",
    );
    return synced;
  }
  if (!previous) {
    log("deploy  smoke FAILED and there is no previous version to go back to");
    return false;
  }
  if (gradual === undefined) {
    await wranglerOk(settings, ["rollback", previous, "--message", `automatic rollback: smoke failed after ${version}`, "--yes"]);
  } else {
    await wranglerOk(settings, [
      "versions",
      "deploy",
      `${previous}@100%`,
      "--message",
      `automatic rollback: smoke failed for ${version}`,
      "--yes",
    ]);
  }
  log(`deploy  smoke FAILED: rolled back automatically, ${previous} serves 100% again`);
  return false;
}

/** PUT /api/workflows: the SDK registers the functions with Inngest (signed with the signing key). */
export async function syncWorkflows(base: string, log: (line: string) => void): Promise<boolean> {
  try {
    const response = await fetch(`${base.replace(/\/+$/, "")}/api/workflows`, { method: "PUT", signal: AbortSignal.timeout(30_000) });
    const body = (await response.json().catch(() => ({}))) as { message?: string; modified?: boolean };
    log(`deploy  PUT /api/workflows → ${response.status}${body.message ? ` ${body.message}` : ""}`);
    return response.ok;
  } catch (error) {
    log(`deploy  PUT /api/workflows failed: ${error instanceof Error ? error.message : String(error)}`);
    return false;
  }
}

function versionFrom(outputs: Array<Record<string, unknown>>, type: string): string {
  const id = outputs.find((o) => o.type === type)?.version_id;
  if (typeof id !== "string") throw new Error(`wrangler did not report the new version id (no "${type}" output)`);
  return id;
}

function revision(): string {
  try {
    const sha = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain"], { cwd: root, encoding: "utf8" }).trim() !== "";
    return `${sha}${dirty ? "+changes" : ""}`;
  } catch {
    return "(no git)";
  }
}

runMain(import.meta, async () => {
  const { values } = parseArgs({ options: { gradual: { type: "string" }, "env-file": { type: "string" } } });
  const settings = loadSettings(process.env, values["env-file"]);
  return (await deploy(settings, { ...(values.gradual !== undefined ? { gradual: Number(values.gradual) } : {}) })) ? 0 : 1;
});
