// `npm run rollback [-- --to <version-id>]`: the previous (or the named) Worker version serves all
// traffic again at once (`wrangler rollback`), then smoke checks 1–5. Safe because every schema
// migration is additive and backward compatible (see docs/runbook.md).
// `npm run versions`: the versions and which of them serve traffic now.
import { parseArgs } from "node:util";
import { loadSettings, requireSettings, runMain, type Settings } from "./cli";
import { smoke } from "./smoke";
import { currentDeployment, mainVersion, wranglerOk } from "./wrangler";

export async function rollback(
  settings: Settings,
  { to, log = console.log }: { to?: string; log?: (line: string) => void } = {},
): Promise<boolean> {
  const { APP_BASE_URL: base } = requireSettings(settings, ["APP_BASE_URL"], "rollback");
  const before = mainVersion(await currentDeployment(settings));
  await wranglerOk(settings, ["rollback", ...(to ? [to] : []), "--message", `npm run rollback${to ? ` --to ${to}` : ""}`, "--yes"]);
  const after = mainVersion(await currentDeployment(settings));
  log(`rollback  ${before ?? "?"} → ${after ?? "?"} (100% of traffic)`);
  const { ok } = await smoke({ baseUrl: base, settings, checks: "1-5", log });
  return ok;
}

interface VersionInfo {
  id: string;
  number?: number;
  metadata?: { created_on?: string; source?: string; author_email?: string };
  annotations?: Record<string, string>;
}

export async function listVersions(settings: Settings, log = console.log): Promise<void> {
  const run = await wranglerOk(settings, ["versions", "list", "--json"], { echo: () => {} });
  const versions = JSON.parse(run.stdout) as VersionInfo[];
  const deployment = await currentDeployment(settings);
  const traffic = new Map((deployment?.versions ?? []).map((v) => [v.version_id, v.percentage]));
  log("version                               created                   traffic  message");
  for (const v of [...versions].sort((a, b) => String(b.metadata?.created_on).localeCompare(String(a.metadata?.created_on)))) {
    const share = traffic.get(v.id);
    log(
      `${v.id.padEnd(36)}  ${String(v.metadata?.created_on ?? "")
        .slice(0, 24)
        .padEnd(24)}  ${(share === undefined ? "" : `${share}%`).padStart(7)}  ${v.annotations?.["workers/message"] ?? ""}`,
    );
  }
}

runMain(import.meta, async () => {
  const { values, positionals } = parseArgs({
    options: { to: { type: "string" }, "env-file": { type: "string" } },
    allowPositionals: true,
  });
  const settings = loadSettings(process.env, values["env-file"]);
  if (positionals[0] === "versions") {
    await listVersions(settings);
    return 0;
  }
  return (await rollback(settings, values.to ? { to: values.to } : {})) ? 0 : 1;
});
