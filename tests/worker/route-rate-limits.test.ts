// Guards issue 19, finding 2's per-person budgets of the web API: import (its dry run shares the budget),
// export, search and the edits that embed answer 429 with an honest Retry-After and a JSON error once a
// person is over their per-minute limit, a refused request counts against nothing, another person is
// not affected, and a slot frees as its minute passes (the agent's soma_rate rows are aged, not waited).
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { describe, expect, it } from "vitest";
import { RATE_LIMITS } from "../../agents/rate-limit";
import type { UserAgent } from "../../agents/user-agent";
import { recordFact } from "../../db/repositories/facts";
import { captureEntity } from "../../db/repositories/memory";
import { call, newPerson, sessionCookie, testDatabase } from "./helpers";
import { exportFileOf, importAs } from "./memory-files";

const ORIGIN = "https://soma.test";
const EMPTY_FILE = JSON.stringify(exportFileOf());

/** A person with one memory and one fact, and the requests of each limited route as them. */
async function signedIn(label: string) {
  const person = await newPerson(label);
  const cookie = await sessionCookie(person);
  const { entityId, factId } = await testDatabase().withUser(person.id, async (tx) => ({
    entityId: (await captureEntity(tx, person.id, { type: "book", name: `${label} Dune`, embedding: null, sourceId: null })).entityId,
    factId: (
      await recordFact(tx, person.id, {
        statement: `${label} drinks tea`,
        category: "preference",
        subject: "drink",
        confidence: 0.9,
        embedding: null,
        sourceId: null,
      })
    ).factId,
  }));
  const patch = (path: string, body: unknown) =>
    call(path, { method: "PATCH", headers: { cookie, origin: ORIGIN, "content-type": "application/json" }, body: JSON.stringify(body) });
  const routes = {
    import: () => importAs(cookie, EMPTY_FILE),
    dryRun: () => importAs(cookie, EMPTY_FILE, {}, "?dryRun=1"),
    export: () => call("/api/export", { headers: { cookie } }),
    search: () => call("/api/memories?q=dune", { headers: { cookie } }),
    editMemory: () => patch(`/api/memories/${entityId}`, { properties: { rating: 5 } }),
    editFact: () => patch(`/api/facts/${factId}`, { category: "preference" }),
  };
  return { person, routes };
}

type RouteName = keyof Awaited<ReturnType<typeof signedIn>>["routes"];
const BUDGET_OF: Record<RouteName, keyof typeof RATE_LIMITS> = {
  import: "import",
  dryRun: "import",
  export: "export",
  search: "search",
  editMemory: "edit",
  editFact: "edit",
};

/** Runs `work` in the person's agent (its soma_rate table is the budget's store). */
async function inAgent<T>(userId: string, work: (agent: UserAgent) => T): Promise<T> {
  return runInDurableObject(await getAgentByName(env.UserAgent, userId), (instance: UserAgent) => work(instance));
}

/** Counts `n` more requests against `budget`, as if made just now (faster than making them). */
function spendMore(userId: string, budget: string, n: number) {
  return inAgent(userId, (agent) => {
    const now = Date.now();
    for (let i = 0; i < n; i++) agent.sql`insert into soma_rate (channel, at) values (${budget}, ${now})`;
  });
}

/** Moves the `budget`'s counted requests `ms` into the past (only the oldest `count` of them, if given). */
function age(userId: string, budget: string, ms: number, count = 1_000_000) {
  return inAgent(userId, (agent) => {
    agent.sql`update soma_rate set at = at - ${ms} where rowid in
      (select rowid from soma_rate where channel = ${budget} order by at, rowid limit ${count})`;
  });
}

function counted(userId: string, budget: string): Promise<number> {
  return inAgent(userId, (agent) => agent.sql<{ n: number }>`select count(*) as n from soma_rate where channel = ${budget}`[0]?.n ?? 0);
}

async function expectRefused(response: Response, maxRetryAfter = 60): Promise<number> {
  expect(response.status).toBe(429);
  const retryAfter = Number(response.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(maxRetryAfter);
  const body = (await response.json()) as { error: { code: string; message: string } };
  expect(body.error.code).toBe("rate_limited");
  expect(body.error.message).toContain(`${retryAfter} second`);
  return retryAfter;
}

describe("finding 2: per-person rate limits of the web API", () => {
  for (const route of Object.keys(BUDGET_OF) as RouteName[]) {
    const budget = BUDGET_OF[route];
    it(`${route}: over ${RATE_LIMITS[budget]} a minute answers 429 with Retry-After; another person is not affected; the limit resets`, async () => {
      const { person, routes } = await signedIn(`rate-${route}`);
      const other = await signedIn(`other-${route}`);
      expect((await routes[route]()).status).toBe(200);
      await spendMore(person.id, budget, RATE_LIMITS[budget] - 1);
      await expectRefused(await routes[route]());
      expect((await other.routes[route]()).status).toBe(200);
      await age(person.id, budget, 61_000);
      expect((await routes[route]()).status).toBe(200);
    });
  }

  it("a dry run and an import share one budget, as do a memory's and a fact's edits", async () => {
    const { person, routes } = await signedIn("shared");
    expect((await routes.dryRun()).status).toBe(200);
    await spendMore(person.id, "import", RATE_LIMITS.import - 1);
    await expectRefused(await routes.import());
    await expectRefused(await routes.dryRun());
    expect((await routes.editMemory()).status).toBe(200);
    await spendMore(person.id, "edit", RATE_LIMITS.edit - 1);
    await expectRefused(await routes.editFact());
    await expectRefused(await routes.editMemory());
  });

  it("Retry-After is the seconds until the oldest counted request leaves its minute", async () => {
    const { person, routes } = await signedIn("honest");
    const started = Date.now();
    expect((await routes.export()).status).toBe(200);
    await spendMore(person.id, "export", RATE_LIMITS.export - 1);
    // The oldest counted export was made at `started` or just after: its minute ends 60 s after it.
    const elapsed = () => Math.ceil((Date.now() - started) / 1000);
    expect(await expectRefused(await routes.export())).toBeGreaterThanOrEqual(60 - elapsed());
    await age(person.id, "export", 45_000);
    expect(await expectRefused(await routes.export(), 15)).toBeGreaterThanOrEqual(15 - elapsed());
  });

  it("a refused request counts against nothing: once the oldest counted one leaves its minute, exactly one more passes", async () => {
    const { person, routes } = await signedIn("refused");
    expect((await routes.search()).status).toBe(200);
    await spendMore(person.id, "search", RATE_LIMITS.search - 1);
    for (let i = 0; i < 3; i++) await expectRefused(await routes.search());
    expect(await counted(person.id, "search")).toBe(RATE_LIMITS.search);
    await age(person.id, "search", 61_000, 1);
    expect((await routes.search()).status).toBe(200);
    await expectRefused(await routes.search());
  });

  it("a request refused before the work (a bad body, an unknown id) is not counted; the chat budget is untouched", async () => {
    const { person, routes } = await signedIn("untouched");
    expect((await routes.search()).status).toBe(200);
    const cookie = await sessionCookie(person);
    for (const [path, body] of [
      ["/api/memories/not-a-uuid", { name: "x" }],
      [`/api/memories/${crypto.randomUUID()}`, { nickname: "not a field" }],
      [`/api/facts/${crypto.randomUUID()}`, {}],
    ] as const) {
      const response = await call(path, {
        method: "PATCH",
        headers: { cookie, origin: ORIGIN, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(400);
    }
    expect(await counted(person.id, "edit")).toBe(0);
    expect(await counted(person.id, "search")).toBe(1);
    expect(await counted(person.id, "chat")).toBe(0);
  });
});
