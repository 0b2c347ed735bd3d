// Guards `npm run secrets:check` and `npm run secrets:push`. .env.example is the one list of names:
// above its "=== Not among the spec's 23" header the spec's 23 secrets (secrets:check counts them,
// `filled N/23`, exit 0 only at 23/23), below it the setup and operator values (the Worker's login
// password for db:setup, OPS_TOKEN, the optional PostHog deletion keys, the Pub/Sub push's OIDC
// audience and service account that production should set, and INNGEST_SIGNING_KEY_FALLBACK, set only
// during a signing key rotation), reported on lines of their own that never fail the check.
// secrets:push copies what the Worker reads, from both groups; wrangler is
// tests/node/fixtures/wrangler-stub.mjs (WRANGLER_BIN).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { CONFIG_KEYS } from "../../platform/config";
import { checkSecrets, extraValues, parseEnvExample, pushSecrets, secretNames, SPEC_SECRET_COUNT } from "../../ops/secrets";

/** The spec's 23 ("Secrets: all 23 secrets filled", "Secrets expected filled: 23 of 23"). */
const SPEC_23 = [
  "APP_BASE_URL",
  "DATABASE_URL",
  "SESSION_SECRET",
  "TOKEN_ENCRYPTION_KEY",
  "TELEGRAM_BOT_TOKEN",
  "TELEGRAM_WEBHOOK_SECRET",
  "TELEGRAM_BOT_USERNAME",
  "MAIL_PUSH_TOKEN",
  "GOOGLE_CLIENT_ID",
  "GOOGLE_CLIENT_SECRET",
  "GMAIL_PUBSUB_TOPIC",
  "INNGEST_EVENT_KEY",
  "INNGEST_SIGNING_KEY",
  "LANGFUSE_PUBLIC_KEY",
  "LANGFUSE_SECRET_KEY",
  "LANGFUSE_BASE_URL",
  "SENTRY_DSN",
  "POSTHOG_API_KEY",
  "POSTHOG_HOST",
  "AXIOM_TOKEN",
  "AXIOM_DATASET",
  "CLOUDFLARE_ACCOUNT_ID",
  "CLOUDFLARE_API_TOKEN",
];
const EXTRAS = [
  "DATABASE_WORKER_PASSWORD",
  "OPS_TOKEN",
  "POSTHOG_PERSONAL_API_KEY",
  "POSTHOG_PROJECT_ID",
  "PUBSUB_PUSH_AUDIENCE",
  "PUBSUB_PUSH_SERVICE_ACCOUNT",
  "INNGEST_SIGNING_KEY_FALLBACK",
  "VAPID_PUBLIC_KEY",
  "VAPID_PRIVATE_KEY",
  "VAPID_SUBJECT",
];
/** The extras that are not about the Pub/Sub push's OIDC token or a rotation (no warning, no rotation line). */
const PLAIN_EXTRAS = [...EXTRAS.slice(0, 4), ...EXTRAS.slice(7)];
const OIDC = ["PUBSUB_PUSH_AUDIENCE", "PUBSUB_PUSH_SERVICE_ACCOUNT"];
const OIDC_WARNING =
  /^warning: recommended for production and not set: PUBSUB_PUSH_AUDIENCE \([^()]+\), PUBSUB_PUSH_SERVICE_ACCOUNT \([^()]+\)$/;
const ROTATION_LINE =
  /^rotation under way: INNGEST_SIGNING_KEY_FALLBACK is set \(.+\); remove it .*wrangler secret delete INNGEST_SIGNING_KEY_FALLBACK/;

const values = Object.fromEntries([...SPEC_23, ...EXTRAS].map((name, i) => [name, `value-${i}-${name.toLowerCase()}-s3cr3t`]));
const envFile = (names: string[]) => {
  const path = `${mkdtempSync(`${tmpdir()}/soma-secrets-`)}/production.env`;
  writeFileSync(path, names.map((n) => `${n}=${values[n]}`).join("\n"));
  return path;
};
const check = (names: string[], environment: NodeJS.ProcessEnv = {}) => {
  const lines: string[] = [];
  const result = checkSecrets(environment, envFile(names), (l) => lines.push(l));
  for (const value of Object.values(values)) expect(lines.join("\n")).not.toContain(value);
  return { ...result, lines };
};
/** The command itself, as the operator runs it. */
const run = (names: string[]) =>
  spawnSync("node_modules/.bin/tsx", ["ops/secrets.ts", "check", "--env-file", envFile(names)], {
    encoding: "utf8",
    env: { PATH: process.env.PATH },
  });

describe("the names in .env.example", () => {
  it("are the spec's 23 secrets, then the setup and operator values apart", () => {
    expect(SPEC_SECRET_COUNT).toBe(23);
    expect(secretNames()).toEqual(SPEC_23);
    expect(extraValues().map((v) => [v.name, v.kind])).toEqual([
      ["DATABASE_WORKER_PASSWORD", "setup"],
      ["OPS_TOKEN", "optional"],
      ["POSTHOG_PERSONAL_API_KEY", "optional"],
      ["POSTHOG_PROJECT_ID", "optional"],
      ["PUBSUB_PUSH_AUDIENCE", "recommended"],
      ["PUBSUB_PUSH_SERVICE_ACCOUNT", "recommended"],
      ["INNGEST_SIGNING_KEY_FALLBACK", "rotation"],
      ["VAPID_PUBLIC_KEY", "optional"],
      ["VAPID_PRIVATE_KEY", "optional"],
      ["VAPID_SUBJECT", "optional"],
    ]);
    for (const extra of extraValues()) expect(extra.note).toMatch(/\w/);
  });

  it("cannot drift: a 24th name among the 23, a missing header or an unlabelled extra is refused", () => {
    const text = readFileSync(".env.example", "utf8");
    expect(parseEnvExample(text).spec).toHaveLength(23);
    expect(() => parseEnvExample(text.replace("APP_BASE_URL=", "NEW_SECRET=\nAPP_BASE_URL="))).toThrow(/24 names .*spec's 23.*NEW_SECRET/s);
    expect(() => parseEnvExample(text.replace("SENTRY_DSN=\n", ""))).toThrow(/22 names .*spec's 23/s);
    expect(() => parseEnvExample(text.replace(/^# === Not among the spec's 23.*$/m, "# (header removed)"))).toThrow(
      /Not among the spec's 23/,
    );
    expect(() => parseEnvExample(text.replace("# Optional: bearer", "# A note without its label\nNEW_VALUE=\n# Optional: bearer"))).toThrow(
      /NEW_VALUE.*"# Setup:", "# Optional:", "# Recommended:" or "# Rotation:"/s,
    );
    expect(() => parseEnvExample(text.replace("OPS_TOKEN=", "APP_BASE_URL=\nOPS_TOKEN="))).toThrow(/APP_BASE_URL.*twice/);
  });
});

describe("npm run secrets:check", () => {
  it("counts the spec's 23 and names the missing ones, never a value", () => {
    const all = check(SPEC_23);
    expect(all).toMatchObject({ filled: 23, total: 23, missing: [] });
    expect(all.lines[0]).toBe("filled 23/23");

    const partial = check(
      SPEC_23.filter((n) => !["SENTRY_DSN", "AXIOM_TOKEN"].includes(n)),
      { AXIOM_TOKEN: "from-env" },
    );
    expect(partial).toMatchObject({ filled: 22, total: 23, missing: ["SENTRY_DSN"] });
    expect(partial.lines.slice(0, 2)).toEqual(["filled 22/23", "missing: SENTRY_DSN"]);
  });

  it("reports the setup and operator values on lines of their own that never fail the 23", () => {
    const none = check(SPEC_23);
    expect(none.extras).toEqual({ set: [], unset: EXTRAS });
    expect(none.lines).toHaveLength(3);
    expect(none.lines[1]).toMatch(
      /^setup and operator values, not among the 23: 0\/10 set; not set: DATABASE_WORKER_PASSWORD \(setup: [^()]+\), OPS_TOKEN \(optional: [^()]+\), POSTHOG_PERSONAL_API_KEY \(optional: [^()]+\), POSTHOG_PROJECT_ID \(optional: [^()]+\), PUBSUB_PUSH_AUDIENCE \(recommended: [^()]+\), PUBSUB_PUSH_SERVICE_ACCOUNT \(recommended: [^()]+\), INNGEST_SIGNING_KEY_FALLBACK \(rotation only: [^()]+\), VAPID_PUBLIC_KEY \(optional: [^()]+\), VAPID_PRIVATE_KEY \(optional: [^()]+\), VAPID_SUBJECT \(optional: [^()]+\)$/,
    );
    expect(none.lines[2]).toMatch(OIDC_WARNING);

    const some = check([...SPEC_23, "DATABASE_WORKER_PASSWORD", ...OIDC]);
    expect(some).toMatchObject({
      filled: 23,
      total: 23,
      missing: [],
      extras: {
        set: ["DATABASE_WORKER_PASSWORD", ...OIDC],
        unset: [
          "OPS_TOKEN",
          "POSTHOG_PERSONAL_API_KEY",
          "POSTHOG_PROJECT_ID",
          "INNGEST_SIGNING_KEY_FALLBACK",
          "VAPID_PUBLIC_KEY",
          "VAPID_PRIVATE_KEY",
          "VAPID_SUBJECT",
        ],
      },
    });
    expect(some.lines).toHaveLength(2);
    expect(some.lines[1]).toMatch(/^setup and operator values, not among the 23: 3\/10 set; not set: OPS_TOKEN \(optional: /);

    const every = check([...SPEC_23, ...EXTRAS]);
    expect(every.lines.slice(0, 2)).toEqual(["filled 23/23", "setup and operator values, not among the 23: 10/10 set"]);
    expect(every.lines[2]).toMatch(ROTATION_LINE);
    expect(every.lines).toHaveLength(3);

    // The extras count with the missing secrets, never in them.
    const short = check([...SPEC_23.slice(1), ...PLAIN_EXTRAS, ...OIDC]);
    expect(short.lines).toEqual([
      "filled 22/23",
      "missing: APP_BASE_URL",
      "setup and operator values, not among the 23: 9/10 set; not set: INNGEST_SIGNING_KEY_FALLBACK (rotation only: the previous INNGEST_SIGNING_KEY, accepted besides it only while a signing key rotation is under way)",
    ]);
  });

  it("issue 25: lists INNGEST_SIGNING_KEY_FALLBACK apart, rotation only, and the 23 stay 23 with or without it", () => {
    expect(secretNames()).toHaveLength(23);
    expect(secretNames()).not.toContain("INNGEST_SIGNING_KEY_FALLBACK");
    expect(extraValues().find((v) => v.name === "INNGEST_SIGNING_KEY_FALLBACK")).toMatchObject({ kind: "rotation" });
    const without = check([...SPEC_23, ...OIDC]);
    expect(without).toMatchObject({ filled: 23, total: 23, missing: [] });
    expect(without.lines[1]).toContain("not set: DATABASE_WORKER_PASSWORD (setup: ");
    expect(without.lines[1]).toMatch(/INNGEST_SIGNING_KEY_FALLBACK \(rotation only: [^()]*rotation[^()]*\)(, |$)/);
    expect(without.lines).toHaveLength(2);
    // Set (a rotation under way): still 23/23, and a reminder to remove it once the new key is promoted.
    const during = check([...SPEC_23, ...OIDC, "INNGEST_SIGNING_KEY_FALLBACK"]);
    expect(during).toMatchObject({ filled: 23, total: 23, missing: [] });
    expect(during.lines[2]).toMatch(ROTATION_LINE);
  });

  it("issue 25: warns when production lacks the Pub/Sub push's OIDC audience or service account, never failing the check", () => {
    expect(check(SPEC_23).lines[2]).toMatch(OIDC_WARNING);
    const halfway = check([...SPEC_23, "PUBSUB_PUSH_AUDIENCE"]);
    expect(halfway.lines[2]).toMatch(/^warning: recommended for production and not set: PUBSUB_PUSH_SERVICE_ACCOUNT \([^()]+\)$/);
    expect(check([...SPEC_23, ...OIDC]).lines.join("\n")).not.toMatch(/warning/);
    const command = run(SPEC_23);
    expect(command.status).toBe(0);
    expect(command.stdout).toMatch(/^warning: recommended for production and not set: PUBSUB_PUSH_AUDIENCE \(/m);
    expect(command.stdout).toMatch(/\?token=/); // the reason: the query token alone, in every push URL
  });

  it("exits 0 at 23/23 without the setup and operator values, 1 below 23 (the command itself)", () => {
    const full = run(SPEC_23);
    expect(full.status).toBe(0);
    expect(full.stdout.split("\n")[0]).toBe("filled 23/23");
    expect(full.stdout).toContain("not set: DATABASE_WORKER_PASSWORD (setup: ");

    const everything = run([...SPEC_23, ...PLAIN_EXTRAS, ...OIDC]);
    expect([everything.status, everything.stdout.trim()]).toEqual([
      0,
      "filled 23/23\nsetup and operator values, not among the 23: 9/10 set; not set: INNGEST_SIGNING_KEY_FALLBACK (rotation only: the previous INNGEST_SIGNING_KEY, accepted besides it only while a signing key rotation is under way)",
    ]);

    const short = run([...SPEC_23.slice(1), ...EXTRAS]);
    expect(short.status).toBe(1);
    expect(short.stdout).toContain("filled 22/23\nmissing: APP_BASE_URL\n");
    for (const value of Object.values(values)) expect(full.stdout + everything.stdout + short.stdout + short.stderr).not.toContain(value);
  });
});

describe("npm run secrets:push", () => {
  it("pushes what the Worker reads, from both groups, through wrangler secret bulk, never echoing a value", async () => {
    const stubState = `${mkdtempSync(`${tmpdir()}/soma-wrangler-stub-`)}/state.json`;
    process.env.STUB_WRANGLER_STATE = stubState;
    const readStub = () =>
      JSON.parse(readFileSync(stubState, "utf8")) as { secrets: Record<string, string>; calls: Array<{ args: string[] }> };
    const lines: string[] = [];
    try {
      const pushed = await pushSecrets(
        { WRANGLER_BIN: `${process.cwd()}/tests/node/fixtures/wrangler-stub.mjs` },
        envFile([...SPEC_23, ...EXTRAS]),
        (l) => lines.push(l),
      );
      // Not DATABASE_URL and DATABASE_WORKER_PASSWORD (db:setup and Hyperdrive), not CLOUDFLARE_* (deploys).
      expect(pushed).toEqual([...SPEC_23, ...EXTRAS].filter((n) => CONFIG_KEYS.includes(n)));
      expect(pushed).toHaveLength(29);
      expect(pushed).toEqual(
        expect.arrayContaining([
          "OPS_TOKEN",
          "PUBSUB_PUSH_AUDIENCE",
          "PUBSUB_PUSH_SERVICE_ACCOUNT",
          "INNGEST_SIGNING_KEY_FALLBACK",
          "VAPID_PRIVATE_KEY",
        ]),
      );
      for (const name of ["DATABASE_URL", "DATABASE_WORKER_PASSWORD", "CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_TOKEN"])
        expect(pushed).not.toContain(name);
      const stored = readStub().secrets;
      expect(Object.keys(stored).sort()).toEqual([...pushed].sort());
      for (const name of pushed) expect(stored[name]).toBe(values[name]);
      // Values travel on wrangler's stdin: not in its arguments, not in anything printed.
      expect(JSON.stringify(readStub().calls.map((c) => c.args))).not.toMatch(/s3cr3t/);
      expect(lines.join("\n")).not.toMatch(/s3cr3t/);
      expect(lines.join("\n")).toContain("Successfully created secret for key: TELEGRAM_BOT_TOKEN");

      // Only what is set: without the optional values, the 20 of the 23 the Worker reads.
      process.env.STUB_WRANGLER_STATE = `${mkdtempSync(`${tmpdir()}/soma-wrangler-stub-`)}/state.json`;
      const fewer = await pushSecrets(
        { WRANGLER_BIN: `${process.cwd()}/tests/node/fixtures/wrangler-stub.mjs` },
        envFile(SPEC_23),
        () => {},
      );
      expect(fewer).toEqual(SPEC_23.filter((n) => CONFIG_KEYS.includes(n)));
      expect(fewer).toHaveLength(20);
    } finally {
      delete process.env.STUB_WRANGLER_STATE;
    }
  });
});
