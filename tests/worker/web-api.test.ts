// Guards the web app's API: memories listed with their source, searched through recall, forgotten
// one at a time; the account endpoint; deleting everything. Only ever the signed-in person's data.
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { call, chatAs, newPerson, sessionCookie, testDatabase } from "./helpers";

async function signedIn() {
  const person = await newPerson();
  const cookie = await sessionCookie(person);
  const chat = (message: string) => chatAs(cookie, message);
  const get = async (path: string) => {
    const response = await call(path, { headers: { cookie } });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  return { person, cookie, chat, get };
}

describe("/api/memories", () => {
  it("401 without a session", async () => {
    expect((await call("/api/memories")).status).toBe(401);
  });

  it("lists memories newest first with where they came from, filters and searches", async () => {
    const me = await signedIn();
    await me.chat("I read Dune Messiah");
    await me.chat("I visited Kyoto");
    await me.chat("I read Dune");
    const all = (await me.get("/api/memories")).body.memories as Array<{
      name: string;
      type: string;
      source: { kind: string; excerpt: string };
    }>;
    expect(all.map((m) => m.name)).toEqual(["Dune", "Kyoto", "Dune Messiah"]);
    expect(all[0]!.source).toMatchObject({ kind: "web", excerpt: "I read Dune" });
    const books = (await me.get("/api/memories?type=book")).body.memories as Array<{ name: string }>;
    expect(books.map((m) => m.name)).toEqual(["Dune", "Dune Messiah"]);
    const found = (await me.get("/api/memories?q=dune")).body.memories as Array<{ name: string }>;
    expect(found.map((m) => m.name).slice(0, 2)).toEqual(["Dune", "Dune Messiah"]);
    expect((await me.get("/api/memories?type=Not%20A%20Type!")).status).toBe(400);
  });

  it("forgets one memory; another person cannot", async () => {
    const me = await signedIn();
    const other = await signedIn();
    await me.chat("I read Emma");
    const [emma] = (await me.get("/api/memories")).body.memories as Array<{ id: string }>;
    const stranger = await call(`/api/memories/${emma!.id}`, { method: "DELETE", headers: { cookie: other.cookie } });
    expect(stranger.status).toBe(404);
    const mine = await call(`/api/memories/${emma!.id}`, { method: "DELETE", headers: { cookie: me.cookie } });
    expect(mine.status).toBe(200);
    expect((await me.get("/api/memories")).body.memories).toEqual([]);
    expect((await call("/api/memories/not-a-uuid", { method: "DELETE", headers: { cookie: me.cookie } })).status).toBe(400);
  });
});

describe("/api/me and /api/account", () => {
  it("describes the signed-in person", async () => {
    const me = await signedIn();
    const { status, body } = await me.get("/api/me");
    expect(status).toBe(200);
    expect(body).toMatchObject({
      id: me.person.id,
      displayName: me.person.displayName,
      telegram: { linked: false },
      google: { connected: false },
    });
  });

  it("deletes everything: rows, session and the agent's conversation", async () => {
    const me = await signedIn();
    await me.chat("I read Ubik");
    const response = await call("/api/account", { method: "DELETE", headers: { cookie: me.cookie, origin: "https://soma.test" } });
    expect(response.status).toBe(200);
    const owner = testDatabase();
    const left = (await owner.withAuth((tx) =>
      tx.execute(sql`select count(*)::int as n from auth.users where id = ${me.person.id}`),
    )) as unknown as Array<{ n: number }>;
    expect(left[0]!.n).toBe(0);
    expect((await call("/api/me", { headers: { cookie: me.cookie } })).status).toBe(401);
  });

  it("the health and webhook routes are not behind the session", async () => {
    expect((await call("/api/health")).status).toBe(200);
  });
});

describe("the app's pages", () => {
  it("send a signed-out visitor to /login and serve the app with a session", async () => {
    const signedOut = await call("/app/memories", { redirect: "manual" });
    expect(signedOut.status).toBe(307);
    expect(signedOut.headers.get("location")).toBe("/login");
    const root = await call("/", { redirect: "manual" });
    expect(root.headers.get("location")).toBe("/app");

    const me = await signedIn();
    for (const path of ["/app", "/app/memories", "/app/settings"]) {
      const page = await call(path, { headers: { cookie: me.cookie } });
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<div id="root"></div>');
      expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(page.headers.get("strict-transport-security")).toMatch(/max-age=/);
    }
  });
});
