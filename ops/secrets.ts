// `npm run secrets:check [-- --env-file F]`: the spec's 23 secrets, looked up in the environment and
// F; prints `filled N/23` and the missing names — never a value — and exits 0 only at 23/23. The
// setup and operator values that are not among the 23 (DATABASE_WORKER_PASSWORD for db:setup,
// OPS_TOKEN, the PostHog deletion keys, the Pub/Sub push's OIDC audience and service account,
// INNGEST_SIGNING_KEY_FALLBACK) get a line of their own, `setup and operator values, not among the 23:
// k/m set; not set: NAME (setup|optional|recommended|rotation only: what it is)`, then, when there is
// one, a warning naming the recommended values that are not set (`warning: recommended for production
// and not set: …`: the OIDC audience and service account, without which the mail intake trusts its
// ?token= alone, a value that travels in every push URL) and a reminder when a rotation's fallback is
// set (`rotation under way: …`: it keeps the old signing key valid until removed). None of these
// lines changes the exit code, and the 23 stay 23.
// `npm run secrets:push -- --env-file F`: copies the names of both groups that the Worker reads
// (CONFIG_KEYS) and that are set to the Worker's secrets with `wrangler secret bulk` (values go
// through wrangler's stdin, never the command line or the terminal): DATABASE_URL and
// DATABASE_WORKER_PASSWORD stay with db:setup and Hyperdrive, CLOUDFLARE_* are deploy credentials.
//
// How the 23 are determined: .env.example is the one list. Its uncommented KEY= lines above the
// header line starting `# === Not among the spec's 23` are the spec's secrets; those below it are the
// setup and operator values, each under a comment whose first line starts `# Setup:`, `# Optional:`,
// `# Recommended:` or `# Rotation:` (the rest of that line is what the report says about it). Commented `# KEY=` lines are neither.
// Both commands refuse to run (exit 1) when the header is missing, a name appears twice, an extra has
// no label, or the names above the header are not exactly 23: a new name has to be put in a group.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { CONFIG_KEYS } from "../platform/config";
import { loadSettings, root, runMain, UsageError, type Settings } from "./cli";
import { wranglerOk } from "./wrangler";

/** "Secrets: all 23 secrets filled" (service spec, section 1 and 8). */
export const SPEC_SECRET_COUNT = 23;
/** The line of .env.example that starts the setup and operator values. */
export const EXTRA_GROUP_HEADER = "# === Not among the spec's 23";

/** A name of .env.example that is not one of the spec's secrets. */
export interface ExtraValue {
  name: string;
  /**
   * setup: needed by a setup command (db:setup); optional: the service runs without it; recommended:
   * the service runs without it, but production should not (a warning); rotation: set only while a key
   * is rotated (a reminder when set).
   */
  kind: "setup" | "optional" | "recommended" | "rotation";
  /** What it is, from its `# Setup:` / `# Optional:` / `# Recommended:` / `# Rotation:` comment. */
  note: string;
}

export interface EnvExample {
  /** The spec's 23 secrets, in the file's order. */
  spec: string[];
  extras: ExtraValue[];
  /** Every name of both groups, in the file's order. */
  all: string[];
}

const KEY_LINE = /^([A-Z][A-Z0-9_]*)=/;
const LABEL_LINE = /^#\s*(Setup|Optional|Recommended|Rotation):\s*(.+?)\.?\s*$/;
const KINDS = { Setup: "setup", Optional: "optional", Recommended: "recommended", Rotation: "rotation" } as const;
/** How the report names a kind. */
const KIND_LABEL: Record<ExtraValue["kind"], string> = {
  setup: "setup",
  optional: "optional",
  recommended: "recommended",
  rotation: "rotation only",
};

/** The two groups of .env.example (its text given for tests); throws when they have drifted. */
export function parseEnvExample(text: string): EnvExample {
  const spec: string[] = [];
  const extras: ExtraValue[] = [];
  const all: string[] = [];
  let inExtras = false;
  let blockStart: string | undefined; // first line of the comment block right above the current line
  for (const line of text.split(/\r?\n/)) {
    if (line.startsWith(EXTRA_GROUP_HEADER)) {
      if (inExtras) throw new Error(`.env.example has the "${EXTRA_GROUP_HEADER}" header twice`);
      inExtras = true;
      blockStart = undefined;
      continue;
    }
    const name = KEY_LINE.exec(line)?.[1];
    if (!name) {
      blockStart = line.startsWith("#") ? (blockStart ?? line) : undefined;
      continue;
    }
    if (all.includes(name)) throw new Error(`.env.example lists ${name} twice`);
    all.push(name);
    if (inExtras) {
      const label = blockStart === undefined ? null : LABEL_LINE.exec(blockStart);
      if (!label)
        throw new Error(
          `.env.example: ${name} is below "${EXTRA_GROUP_HEADER}" without a comment starting "# Setup:", "# Optional:", "# Recommended:" or "# Rotation:" right above it`,
        );
      extras.push({ name, kind: KINDS[label[1] as keyof typeof KINDS], note: label[2]! });
    } else {
      spec.push(name);
    }
    blockStart = undefined;
  }
  if (!inExtras)
    throw new Error(
      `.env.example has no "${EXTRA_GROUP_HEADER}" header line: the spec's ${SPEC_SECRET_COUNT} secrets cannot be told apart`,
    );
  if (spec.length !== SPEC_SECRET_COUNT) {
    throw new Error(
      `.env.example lists ${spec.length} names above "${EXTRA_GROUP_HEADER}", where the spec's ${SPEC_SECRET_COUNT} secrets go: ${spec.join(", ")}. ` +
        `A name that is not one of the spec's secrets goes below that header, with a "# Setup:" or "# Optional:" comment.`,
    );
  }
  return { spec, extras, all };
}

function envExample(): EnvExample {
  return parseEnvExample(readFileSync(`${root}.env.example`, "utf8"));
}

/** The spec's 23 secret names, in .env.example's order. */
export function secretNames(): string[] {
  return envExample().spec;
}

/** The setup and operator values, not among the 23, in .env.example's order. */
export function extraValues(): ExtraValue[] {
  return envExample().extras;
}

/** The environment and the env file only (not the project's .env: this checks a production set). */
function secretSettings(environment: NodeJS.ProcessEnv, envFile: string | undefined): Settings {
  return loadSettings(environment, envFile, { projectEnv: false });
}

export interface SecretsCheck {
  /** Of the spec's 23. */
  filled: number;
  total: number;
  missing: string[];
  /** The setup and operator values: reported, never counted. */
  extras: { set: string[]; unset: string[] };
  /** The recommended values that are not set (warned about, never failing the check). */
  warnings: string[];
}

export function checkSecrets(environment: NodeJS.ProcessEnv, envFile?: string, log = console.log): SecretsCheck {
  const { spec, extras } = envExample();
  const settings = secretSettings(environment, envFile);
  const missing = spec.filter((n) => !settings[n]);
  const filled = spec.length - missing.length;
  log(`filled ${filled}/${spec.length}`);
  if (missing.length) log(`missing: ${missing.join(", ")}`);
  const unset = extras.filter((e) => !settings[e.name]);
  const set = extras.filter((e) => settings[e.name]).map((e) => e.name);
  if (extras.length) {
    const notSet = unset.length ? `; not set: ${unset.map((e) => `${e.name} (${KIND_LABEL[e.kind]}: ${e.note})`).join(", ")}` : "";
    log(`setup and operator values, not among the ${SPEC_SECRET_COUNT}: ${set.length}/${extras.length} set${notSet}`);
  }
  const warned = unset.filter((e) => e.kind === "recommended");
  if (warned.length) log(`warning: recommended for production and not set: ${warned.map((e) => `${e.name} (${e.note})`).join(", ")}`);
  for (const e of extras.filter((x) => x.kind === "rotation" && settings[x.name])) {
    log(
      `rotation under way: ${e.name} is set (${e.note}); remove it from the env file and the Worker ` +
        `(npx wrangler secret delete ${e.name}) once the rotation is complete: until then the old key stays valid`,
    );
  }
  return { filled, total: spec.length, missing, extras: { set, unset: unset.map((e) => e.name) }, warnings: warned.map((e) => e.name) };
}

export async function pushSecrets(environment: NodeJS.ProcessEnv, envFile: string, log = console.log): Promise<string[]> {
  const settings = secretSettings(environment, envFile);
  const runtime = envExample().all.filter((n) => CONFIG_KEYS.includes(n) && settings[n]);
  if (runtime.length === 0) throw new UsageError(`no secrets to push in ${envFile}`);
  log(`secrets:push  ${runtime.length} secrets the Worker reads: ${runtime.join(", ")}`);
  const values = Object.fromEntries(runtime.map((n) => [n, settings[n]!]));
  await wranglerOk({ ...settings }, ["secret", "bulk"], {
    input: JSON.stringify(values),
    echo: (line) => log(`  wrangler │ ${redact(line, Object.values(values))}`),
  });
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
