// Guards /api/workflows against unauthenticated JSON bombs (issue 19, finding 1): in cloud mode a request
// without a fresh, well-formed X-Inngest-Signature is refused (401) before a byte of its body is read; a
// signed one's body is read under a byte cap and shape limits and its signature checked (over the raw
// bytes, or the canonical form Inngest signs) before the SDK parses it; a bomb is refused (413) after a
// fraction of it and the Worker keeps serving. Dev mode checks no signature but has the same limits.
import { env } from "cloudflare:workers";
import canonicalize from "canonicalize";
import { describe, expect, it } from "vitest";
import { clientOptions } from "../../agents/workflows/client";
import { inngestSignature } from "../../agents/workflows/signature";
import { loadConfig } from "../../platform/config";
import { call, callWithEnv, countedBody } from "./helpers";

const RUN = "/api/workflows?fnId=soma-fact-extract&stepId=step";
const JSON_TYPE = { "content-type": "application/json" };
const DEV = { ENVIRONMENT: "development", INNGEST_DEV: "1" };

function bomb(objects: number): string {
  return `{"a":[${"{},".repeat(objects - 1)}{}]}`;
}

/** A signature of the right form and a fresh time, made without the key. */
function forged(at = Date.now()): string {
  return `t=${Math.floor(at / 1000)}&s=${"ab".repeat(32)}`;
}

function send(method: string, body: BodyInit, headers: Record<string, string>, overrides: Record<string, unknown> = {}, path = RUN) {
  return callWithEnv(overrides, path, { method, headers: { ...JSON_TYPE, ...headers }, body, duplex: "half" } as RequestInit);
}

async function errorOf(response: Response): Promise<{ code: string; message: string }> {
  return ((await response.json()) as { error: { code: string; message: string } }).error;
}

/** fact-extract's first request as the engine sends it (the extract step runs on the offline model). */
function runRequest() {
  const event = {
    name: "conversation/turn.completed",
    id: `turn-${crypto.randomUUID()}`,
    data: {
      userId: crypto.randomUUID(),
      channel: "web",
      source: { kind: "web", externalId: `web:${crypto.randomUUID()}` },
      text: "I'm vegetarian.",
    },
  };
  return {
    version: 2,
    steps: {},
    ctx: {
      use_api: false,
      stack: { current: 0, stack: [] },
      run_id: `run-${crypto.randomUUID()}`,
      disable_immediate_execution: false,
      attempt: 0,
    },
    events: [event],
    event,
  };
}

async function expectStepRan(response: Response) {
  expect(response.status).toBe(206);
  const ops = (await response.json()) as Array<{ op: string; displayName?: string }>;
  expect(ops[0]).toMatchObject({ op: "StepRun", displayName: "extract" });
}

async function introspect(): Promise<Response> {
  return call("/api/workflows", { headers: { "X-Inngest-Signature": await inngestSignature("", env.INNGEST_SIGNING_KEY) } });
}

describe("cloud mode: refused on the signature header, before the body is read", () => {
  const refusals: Array<[string, Record<string, string>, RegExp]> = [
    ["no signature", {}, /missing/],
    ["a signature of another form", { "x-inngest-signature": `t=${Date.now()}&s=zz` }, /not of the form/],
    ["a signature from 6 minutes ago", { "x-inngest-signature": forged(Date.now() - 6 * 60_000) }, /more than 5 minutes/],
    ["a signature 6 minutes ahead", { "x-inngest-signature": forged(Date.now() + 6 * 60_000) }, /more than 5 minutes/],
  ];
  for (const [label, headers, message] of refusals) {
    it(`POST with ${label} → 401, no piece of a 1 MB bomb read`, async () => {
      const body = countedBody(bomb(350_000));
      const response = await send("POST", body.stream, headers);
      expect(response.status).toBe(401);
      const error = await errorOf(response);
      expect(error.code).toBe("unauthorized");
      expect(error.message).toMatch(message);
      expect(body.pulls()).toBe(0);
    });
  }

  it("GET (the introspection) with a fresh forged signature → 401; signed with the key → 200", async () => {
    const response = await call("/api/workflows", { headers: { "x-inngest-signature": forged() } });
    expect(response.status).toBe(401);
    expect((await errorOf(response)).code).toBe("unauthorized");
    expect((await introspect()).status).toBe(200);
  });
});

describe("cloud mode: a fresh forged signature gets the body read under the limits, then 401 or 413", () => {
  it("a wrong signature over a 3 MB body of few values → 401 before the SDK runs", async () => {
    const body = JSON.stringify({ ...runRequest(), padding: "x".repeat(3_000_000) });
    const response = await send("POST", body, { "x-inngest-signature": forged() });
    expect(response.status).toBe(401);
    expect(await errorOf(response)).toMatchObject({ code: "unauthorized", message: expect.stringMatching(/does not match/) });
  });

  it("a 4 MB bomb → 413 after reading a fraction of it, and the Worker answers right after", async () => {
    const body = countedBody(bomb(1_400_000));
    const response = await send("POST", body.stream, { "x-inngest-signature": forged(), "content-length": String(body.length) });
    expect(response.status).toBe(413);
    expect((await errorOf(response)).message).toMatch(/more than 200000 values/);
    expect(body.pieces).toBe(65);
    expect(body.pulls()).toBeLessThan(15);
    const next = await introspect();
    expect(next.status).toBe(200);
    expect(await next.json()).toMatchObject({ mode: "cloud", function_count: 8 });
  });

  it("a body over the byte cap (8 MB declared) → 413 before it is read", async () => {
    const body = countedBody(bomb(2_800_000));
    const response = await send("POST", body.stream, { "x-inngest-signature": forged(), "content-length": String(body.length) });
    expect(response.status).toBe(413);
    expect(body.pulls()).toBe(0);
  });

  it("a nesting deeper than 32 → 400", async () => {
    const response = await send("POST", `{"a":${"[".repeat(33)}${"]".repeat(33)}}`, { "x-inngest-signature": forged() });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).message).toBe("The JSON nests deeper than 32 levels.");
  });
});

describe("cloud mode: signed requests reach the SDK and run", () => {
  it("signed over the canonical form while the bytes are not canonical (keys out of order, spaces) → the step runs", async () => {
    const request = runRequest();
    const raw = JSON.stringify(request, null, 2);
    const canonical = canonicalize(request)!;
    expect(raw).not.toBe(canonical);
    const response = await send("POST", raw, { "x-inngest-signature": await inngestSignature(canonical, env.INNGEST_SIGNING_KEY) });
    await expectStepRan(response);
  });

  it("signed over the bytes sent, already canonical (as Inngest sends them, and the smoke check signs) → the step runs", async () => {
    const body = canonicalize(runRequest())!;
    const response = await send("POST", body, { "x-inngest-signature": await inngestSignature(body, env.INNGEST_SIGNING_KEY) });
    await expectStepRan(response);
  });

  it("a right signature from outside the 5-minute window → 401", async () => {
    const body = canonicalize(runRequest())!;
    const old = await inngestSignature(body, env.INNGEST_SIGNING_KEY, new Date(Date.now() - 6 * 60_000));
    const response = await send("POST", body, { "x-inngest-signature": old });
    expect(response.status).toBe(401);
  });

  it("a signature over another body → 401", async () => {
    const signature = await inngestSignature(canonicalize(runRequest())!, env.INNGEST_SIGNING_KEY);
    const response = await send("POST", canonicalize(runRequest())!, { "x-inngest-signature": signature });
    expect(response.status).toBe(401);
    expect((await errorOf(response)).code).toBe("unauthorized");
  });
});

describe("PUT (the sync): unsigned when out of band, so only a small body is read; signed in band, checked", () => {
  // A PUT that got past the limits would sync; INNGEST_BASE_URL points where the stand-in serves nothing.
  const noSync = { INNGEST_BASE_URL: `${env.STAND_IN_URL}/no-sync-in-door-test` };

  it("an unsigned 63 kB bomb → 413; an 8 MB one streamed → 413 after 64 kB", async () => {
    const small = await send("PUT", bomb(21_000), {}, noSync, "/api/workflows");
    expect(small.status).toBe(413);
    const big = countedBody(bomb(2_800_000), 16 * 1024);
    const response = await send("PUT", big.stream, {}, noSync, "/api/workflows");
    expect(response.status).toBe(413);
    expect(big.pulls()).toBeLessThanOrEqual(6);
  });

  it("a signed PUT (Inngest's in-band sync) is checked like a run: a stale signature → 401 unread, a forged one → 401", async () => {
    const body = countedBody(bomb(21_000));
    const stale = await send("PUT", body.stream, { "x-inngest-signature": forged(Date.now() - 6 * 60_000) }, noSync, "/api/workflows");
    expect(stale.status).toBe(401);
    expect(body.pulls()).toBe(0);
    const inBand = { "x-inngest-signature": forged(), "x-inngest-sync-kind": "in_band" };
    const response = await send("PUT", JSON.stringify({ url: "https://evil.example/api/workflows" }), inBand, noSync, "/api/workflows");
    expect(response.status).toBe(401);
    expect((await errorOf(response)).code).toBe("unauthorized");
  });
});

describe("dev mode (no signatures): the same limits before the SDK parses", () => {
  it("a 4 MB bomb → 413 after a fraction of it; the Worker answers right after", async () => {
    const body = countedBody(bomb(1_400_000));
    const response = await send("POST", body.stream, { "content-length": String(body.length) }, DEV);
    expect(response.status).toBe(413);
    expect(body.pulls()).toBeLessThan(15);
    const next = await callWithEnv(DEV, "/api/workflows");
    expect(next.status).toBe(200);
    expect(await next.json()).toMatchObject({ mode: "dev", function_count: 8 });
  });

  it("an unsigned run request runs", async () => {
    await expectStepRan(await send("POST", JSON.stringify(runRequest()), {}, DEV));
  });
});

describe("a signing key rotation (issue 25, item 11): INNGEST_SIGNING_KEY_FALLBACK is honoured by the door and the SDK", () => {
  // Inngest's rotation: the new key becomes INNGEST_SIGNING_KEY and the old one INNGEST_SIGNING_KEY_FALLBACK
  // until the new key is promoted; meanwhile Inngest still signs with the old one.
  const newKey = `signkey-prod-${"1a".repeat(32)}`;
  const oldKey = `signkey-prod-${"2b".repeat(32)}`;
  const unknownKey = `signkey-prod-${"3c".repeat(32)}`;
  const rotating = { INNGEST_SIGNING_KEY: newKey, INNGEST_SIGNING_KEY_FALLBACK: oldKey };

  it("a run signed with the fallback (the old key) → the step runs; signed with the new key → runs too", async () => {
    const old = canonicalize(runRequest())!;
    await expectStepRan(await send("POST", old, { "x-inngest-signature": await inngestSignature(old, oldKey) }, rotating));
    const fresh = canonicalize(runRequest())!;
    await expectStepRan(await send("POST", fresh, { "x-inngest-signature": await inngestSignature(fresh, newKey) }, rotating));
  });

  it("signed over the canonical form with the fallback while the bytes are not canonical → the step runs", async () => {
    const request = runRequest();
    const response = await send(
      "POST",
      JSON.stringify(request, null, 2),
      { "x-inngest-signature": await inngestSignature(canonicalize(request)!, oldKey) },
      rotating,
    );
    await expectStepRan(response);
  });

  it("a run signed with a key that is neither → 401 at the door, before the SDK", async () => {
    const body = canonicalize(runRequest())!;
    const response = await send("POST", body, { "x-inngest-signature": await inngestSignature(body, unknownKey) }, rotating);
    expect(response.status).toBe(401);
    expect(await errorOf(response)).toMatchObject({ code: "unauthorized", message: expect.stringMatching(/does not match/) });
  });

  it("once the rotation is over (no fallback), the old key is refused", async () => {
    const body = canonicalize(runRequest())!;
    const response = await send(
      "POST",
      body,
      { "x-inngest-signature": await inngestSignature(body, oldKey) },
      { INNGEST_SIGNING_KEY: newKey },
    );
    expect(response.status).toBe(401);
    expect((await errorOf(response)).code).toBe("unauthorized");
  });

  it("the introspection signed with the fallback is answered by the SDK, which knows the fallback", async () => {
    const response = await callWithEnv(rotating, "/api/workflows", {
      headers: { "x-inngest-signature": await inngestSignature("", oldKey) },
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { authentication_succeeded?: boolean; signing_key_fallback_hash?: string | null };
    expect(body.authentication_succeeded).toBe(true);
    expect(body.signing_key_fallback_hash).toMatch(/^[0-9a-f]{12}$/);
    const unknown = await callWithEnv(rotating, "/api/workflows", {
      headers: { "x-inngest-signature": await inngestSignature("", unknownKey) },
    });
    expect(unknown.status).toBe(401);
  });

  it("the SDK's client takes the fallback from the validated configuration, not from its own reading of the env", () => {
    const config = loadConfig({ ...env, ...rotating });
    expect(clientOptions(config)).toMatchObject({ signingKey: newKey, signingKeyFallback: oldKey });
    expect(clientOptions(loadConfig({ ...env, INNGEST_SIGNING_KEY: newKey }))).not.toHaveProperty("signingKeyFallback");
  });
});
