// Guards the spec's health contract: {ok, service: "web", db, ts}, 503 with db:false within 2 s when
// Postgres is unreachable or hung.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../worker/index";

async function healthWith(connectionString: string) {
  const ctx = createExecutionContext();
  const started = Date.now();
  const response = await worker.fetch(
    new Request("https://soma.test/api/health"),
    { ...env, HYPERDRIVE: { ...env.HYPERDRIVE, connectionString } },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return { response, elapsed: Date.now() - started, body: (await response.json()) as Record<string, unknown> };
}

describe("GET /api/health", () => {
  it("reports ok and db true with a real round trip", async () => {
    const { response, body } = await healthWith(env.HYPERDRIVE.connectionString);
    expect(response.status).toBe(200);
    expect(body).toMatchObject({ ok: true, service: "web", db: true });
    expect(new Date(String(body.ts)).toISOString()).toBe(body.ts);
    expect(response.headers.get("cache-control")).toBe("no-store");
  });

  it("answers 503 db:false when nothing listens", async () => {
    const { response, body, elapsed } = await healthWith("postgres://postgres:postgres@127.0.0.1:1/postgres");
    expect(response.status).toBe(503);
    expect(body).toMatchObject({ ok: false, service: "web", db: false });
    expect(elapsed).toBeLessThan(2000);
  });

  it("answers 503 db:false within 2 s when the database hangs", async () => {
    const { response, body, elapsed } = await healthWith(env.HANGING_DATABASE_URL);
    expect(response.status).toBe(503);
    expect(body).toMatchObject({ ok: false, db: false });
    expect(elapsed).toBeLessThan(2000);
  });
});
