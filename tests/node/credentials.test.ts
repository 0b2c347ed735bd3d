// Issue 19, finding 6: credentials never leave in clear. Every configuration value named like a
// credential is scrubbed from what goes to a telemetry sink — the list is derived from the config
// schema, so a new secret is covered the day it is added — and `npm run inbox:dead` sends the operator
// token over plain http only to this machine.
import { describe, expect, it } from "vitest";
import { listDeadLetters } from "../../ops/inbox-dead";
import { CONFIG_KEYS, type Config, SECRET_CONFIG_KEYS } from "../../platform/config";
import { scrubSecrets } from "../../platform/telemetry/scrub";

describe("the scrub list", () => {
  it("holds every configuration value named like a credential, the operator token and PostHog's personal key among them", () => {
    const credentialNamed = CONFIG_KEYS.filter(
      (key) => /(SECRET|TOKEN|KEY|DSN|PASSWORD)(_FALLBACK)?$/.test(key) && !["LANGFUSE_PUBLIC_KEY", "VAPID_PUBLIC_KEY"].includes(key),
    );
    expect([...SECRET_CONFIG_KEYS].sort()).toEqual([...credentialNamed].sort());
    expect(SECRET_CONFIG_KEYS).toEqual(
      expect.arrayContaining([
        "OPS_TOKEN",
        "POSTHOG_PERSONAL_API_KEY",
        "SESSION_SECRET",
        "AI_API_KEY",
        "INNGEST_SIGNING_KEY_FALLBACK",
        "VAPID_PRIVATE_KEY",
      ]),
    );
    // Public by design: Langfuse's key goes out with every trace, VAPID's to every browser that subscribes.
    expect(SECRET_CONFIG_KEYS).not.toContain("LANGFUSE_PUBLIC_KEY");
    expect(SECRET_CONFIG_KEYS).not.toContain("VAPID_PUBLIC_KEY");
  });

  it("replaces each of them wherever it sits in what a sink would store", () => {
    const values = Object.fromEntries(SECRET_CONFIG_KEYS.map((key, i) => [key, `value-of-${key.toLowerCase()}-${i}`]));
    const config = { ...values, LANGFUSE_PUBLIC_KEY: "pk-lf-public" } as unknown as Config;
    const event = { message: `failed with ${Object.values(values).join(" and ")}`, nested: { headers: values }, publicKey: "pk-lf-public" };
    const stored = JSON.stringify(scrubSecrets(event, config));
    for (const value of Object.values(values)) expect(stored).not.toContain(value);
    expect(stored).toContain("pk-lf-public");
  });
});

describe("npm run inbox:dead", () => {
  const settings = { OPS_TOKEN: "ops-token-that-must-not-travel" };

  it("refuses to send the operator token over plain http to another host, before any request", async () => {
    for (const url of ["http://soma.example.com", "http://10.0.0.5:8787", "http://127.0.0.1.nip.io"]) {
      await expect(listDeadLetters(settings, { url })).rejects.toThrow(/needs https:\/\//);
    }
  });

  it("allows https anywhere and plain http to this machine (then the request itself decides)", async () => {
    // Nothing listens on port 1: the refusal is the connection's, not the command's.
    for (const url of ["http://127.0.0.1:1", "http://localhost:1", "http://[::1]:1", "https://127.0.0.1:1"]) {
      await expect(listDeadLetters(settings, { url })).rejects.not.toThrow(/needs https:\/\//);
    }
  });
});
