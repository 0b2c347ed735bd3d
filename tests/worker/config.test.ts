// Guards configuration at the edge (issue 12, findings 9b–9d): a malformed or missing value makes the
// Worker refuse to serve with a JSON error naming the variable (never its value), and production never
// runs its workflow endpoint unsigned. (Probed on /login: every route loads the config, and it needs no
// database, so a busy test Postgres cannot turn a 200 into a 503.)
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { inngestSignature } from "../../agents/workflows/signature";
import { callWithEnv } from "./helpers";

const PRODUCTION = { ENVIRONMENT: "production", SESSION_SECRET: "s".repeat(32) };

async function configError(overrides: Record<string, unknown>): Promise<string> {
  const response = await callWithEnv(overrides, "/login");
  expect(response.status).toBe(500);
  const body = (await response.json()) as { error: { code: string; message: string; requestId: string } };
  expect(body.error.code).toBe("config_invalid");
  expect(body.error.requestId).toBeTruthy();
  return body.error.message;
}

describe("finding 9: configuration is validated when it is loaded", () => {
  it("9b: a TOKEN_ENCRYPTION_KEY that is not base64 of exactly 32 bytes is refused, naming the variable", async () => {
    const bytes = (n: number) => btoa(String.fromCharCode(...new Uint8Array(n).fill(7)));
    for (const key of [bytes(16), bytes(31), bytes(33), "not base64 at all!", `${bytes(32)}!`, "correct horse battery staple"]) {
      const message = await configError({ TOKEN_ENCRYPTION_KEY: key });
      expect(message).toContain("TOKEN_ENCRYPTION_KEY must be 32 random bytes in base64");
      expect(message).not.toContain(key);
    }
    expect((await callWithEnv({ TOKEN_ENCRYPTION_KEY: bytes(32) }, "/login")).status).toBe(200);
  });

  it("9c: PUBSUB_PUSH_SERVICE_ACCOUNT is required whenever PUBSUB_PUSH_AUDIENCE is set", async () => {
    expect(await configError({ PUBSUB_PUSH_SERVICE_ACCOUNT: "" })).toContain(
      "PUBSUB_PUSH_SERVICE_ACCOUNT is required when PUBSUB_PUSH_AUDIENCE is set",
    );
    expect((await callWithEnv({ PUBSUB_PUSH_AUDIENCE: "", PUBSUB_PUSH_SERVICE_ACCOUNT: "" }, "/login")).status).toBe(200);
  });

  it("9d: production requires INNGEST_SIGNING_KEY and ignores INNGEST_DEV", async () => {
    expect(await configError({ ...PRODUCTION, INNGEST_SIGNING_KEY: "" })).toContain("INNGEST_SIGNING_KEY is required in production");

    // INNGEST_DEV in production: still cloud mode, so an unsigned introspection is the public one and
    // an unsigned run is refused.
    const unsigned = await callWithEnv({ ...PRODUCTION, INNGEST_DEV: "1" }, "/api/workflows");
    expect(await unsigned.json()).toMatchObject({ mode: "cloud", authentication_succeeded: false });
    const run = await callWithEnv({ ...PRODUCTION, INNGEST_DEV: "1" }, "/api/workflows?fnId=soma-fact-extract&stepId=step", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(run.status).toBe(401);
    const signed = await callWithEnv({ ...PRODUCTION, INNGEST_DEV: "1" }, "/api/workflows", {
      headers: { "X-Inngest-Signature": await inngestSignature("", env.INNGEST_SIGNING_KEY) },
    });
    expect(((await signed.json()) as { mode: string }).mode).toBe("cloud");

    // Outside production it still selects the local dev server, as npm start relies on.
    const dev = await callWithEnv({ ENVIRONMENT: "development", INNGEST_DEV: "1" }, "/api/workflows");
    expect(dev.status).toBe(200);
    expect(((await dev.json()) as { mode: string }).mode).toBe("dev");
  });
});
