// /api/workflows in cloud mode (keys set, no INNGEST_DEV), inside workerd: the introspection answers
// its public fields unsigned, everything signed, and refuses a wrong signature; PUT syncs all eight functions with the engine (a stand-in).
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { inngestSignature } from "../../agents/workflows/signature";
import { call } from "./helpers";

const FUNCTION_IDS = [
  "brief-generate",
  "fact-extract",
  "mail-ingest",
  "mail-watch-renew",
  "memory-consolidate",
  "morning-brief-cron",
  "reminder-deliver",
  "weekly-review",
];

function sign(body: string): Promise<string> {
  return inngestSignature(body, env.INNGEST_SIGNING_KEY);
}

describe("GET /api/workflows", () => {
  it("answers an unsigned introspection in cloud mode with the spec's fields and nothing else", async () => {
    // The spec's smoke check 2 is a plain GET; Inngest v4's SDK alone would answer it 401.
    const response = await call("/api/workflows");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      authentication_succeeded: false,
      function_count: 8,
      has_event_key: true,
      has_signing_key: true,
      mode: "cloud",
      schema_version: "2024-05-24",
    });
  });

  it("refuses a wrongly signed one", async () => {
    const signature = await inngestSignature("", `signkey-test-${"0".repeat(64)}`);
    const response = await call("/api/workflows", { headers: { "X-Inngest-Signature": signature } });
    expect(response.status).toBe(401);
  });

  it("reports keys, cloud mode and eight functions when signed with the signing key", async () => {
    const response = await call("/api/workflows", { headers: { "X-Inngest-Signature": await sign("") } });
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      authentication_succeeded: true,
      has_event_key: true,
      has_signing_key: true,
      mode: "cloud",
      function_count: 8,
    });
    // What only the signed introspection says (the unsigned one above has none of it).
    expect(Object.keys(body)).toEqual(expect.arrayContaining(["app_id", "signing_key_hash", "serve_origin", "sdk_version"]));
  });
});

describe("PUT /api/workflows", () => {
  it("registers all eight functions, with their triggers, at INNGEST_BASE_URL", async () => {
    const before = (await (await fetch(`${env.STAND_IN_URL}/__inngest/registrations`)).json()) as unknown[];
    const response = await call("/api/workflows", { method: "PUT" });
    expect(response.status).toBe(200);
    const registrations = (await (await fetch(`${env.STAND_IN_URL}/__inngest/registrations`)).json()) as Array<{
      body: { url: string; appName: string; functions: Array<{ id: string; triggers: Array<{ event?: string; cron?: string }> }> };
      authorization: string | null;
    }>;
    expect(registrations.length).toBe(before.length + 1);
    const sync = registrations.at(-1)!;
    expect(sync.authorization).toMatch(/^Bearer signkey-test-[0-9a-f]{64}$/);
    expect(sync.body.url).toBe("https://soma.test/api/workflows");
    expect(sync.body.appName).toBe("soma");
    const ids = sync.body.functions.map((f) => f.id.replace(/^soma-/, "")).sort();
    expect(ids).toEqual(FUNCTION_IDS);
    const triggers = Object.fromEntries(sync.body.functions.map((f) => [f.id.replace(/^soma-/, ""), f.triggers[0]]));
    expect(triggers["fact-extract"]).toEqual({ event: "conversation/turn.completed" });
    expect(triggers["mail-ingest"]).toEqual({ event: "mail/notification.received" });
    expect(triggers["reminder-deliver"]).toEqual({ event: "schedule/reminder.created" });
    expect(triggers["brief-generate"]).toEqual({ event: "brief/requested" });
    expect(triggers["morning-brief-cron"]?.cron).toMatch(/0 \* \* \* \*$/);
    expect(triggers["memory-consolidate"]?.cron).toBeDefined();
    expect(triggers["mail-watch-renew"]?.cron).toBeDefined();
    expect(triggers["weekly-review"]?.cron).toBeDefined();
  });
});

describe("POST /api/workflows", () => {
  it("refuses an unsigned run request", async () => {
    const response = await call("/api/workflows?fnId=soma-fact-extract&stepId=step", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ event: { name: "conversation/turn.completed", data: {} }, events: [], steps: {}, ctx: {} }),
    });
    expect(response.status).toBe(401);
  });
});
