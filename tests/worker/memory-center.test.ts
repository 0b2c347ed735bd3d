// Guards the memory center's API: keyset paging newest first with type and time filters, one memory's
// provenance, relations and events, edits (validation, (type, name) collisions), forget and undo — and
// that none of it ever reaches another person's memories.
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import type { Person } from "../../db/repositories/auth";
import { call, newPerson, sessionCookie, testDatabase } from "./helpers";

const ORIGIN = "https://soma.test";

/** What these tests read of the memory-center responses (each response has some of these fields). */
interface CenterBody {
  memories: Array<{ name: string; type: string; source?: unknown }>;
  nextCursor: string | null;
  types: unknown;
  memory: { name: string; status: string; source?: unknown };
  relations: unknown[];
  events: unknown;
  error: { code: string; message: string };
}

async function signedIn() {
  const person = await newPerson("center");
  const cookie = await sessionCookie(person);
  const request = async (path: string, init: RequestInit = {}) => {
    const headers = {
      cookie,
      origin: ORIGIN,
      ...(init.body ? { "content-type": "application/json" } : {}),
      ...(init.headers as Record<string, string>),
    };
    const response = await call(path, { ...init, headers });
    return { status: response.status, body: (await response.json()) as CenterBody };
  };
  const patch = (id: string, body: unknown) => request(`/api/memories/${id}`, { method: "PATCH", body: JSON.stringify(body) });
  return { person, cookie, request, patch };
}

/** Inserts memories as `person` (through the RLS helper), told at `createdAt` (and happened at `happenedAt`), and returns their ids. */
async function seedMemories(
  person: Person,
  memories: Array<{ type: string; name: string; createdAt: string; happenedAt?: string; text?: string; kind?: string }>,
) {
  return testDatabase().withUser(person.id, async (tx) => {
    const ids: string[] = [];
    for (const m of memories) {
      const [source] = (await tx.execute(sql`
        insert into sources (user_id, kind, external_id, payload, created_at)
        values (${person.id}, ${m.kind ?? "web"}, ${crypto.randomUUID()}, ${JSON.stringify({ text: m.text ?? `I read ${m.name}` })}::jsonb, ${m.createdAt}::timestamptz)
        returning id`)) as unknown as Array<{ id: string }>;
      const [row] = (await tx.execute(sql`
        insert into entities (user_id, type, name, normalized_name, source_id, created_at, told_at, happened_at)
        values (${person.id}, ${m.type}, ${m.name}, ${m.name.toLowerCase()}, ${source!.id}, ${m.createdAt}::timestamptz, ${m.createdAt}::timestamptz, ${m.happenedAt ?? null}::timestamptz)
        returning id`)) as unknown as Array<{ id: string }>;
      ids.push(row!.id);
    }
    return ids;
  });
}

describe("GET /api/memories paging", () => {
  it("walks thousands of memories newest first, page by page, without gaps or repeats", async () => {
    const me = await signedIn();
    // 1,050 memories in one statement; a few share a created_at so the id breaks the tie.
    await testDatabase().withUser(me.person.id, (tx) =>
      tx.execute(sql`
        insert into entities (user_id, type, name, normalized_name, created_at)
        select ${me.person.id}, case when n % 3 = 0 then 'movie' else 'book' end, 'Title ' || n, 'title ' || n,
               timestamptz '2024-01-01T00:00:00Z' + ((n / 2) * interval '1 minute')
        from generate_series(1, 1050) n`),
    );
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await me.request(`/api/memories?limit=200${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      seen.push(...page.body.memories.map((m: { name: string }) => m.name));
      cursor = page.body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(6);
    expect(seen).toHaveLength(1050);
    expect(new Set(seen).size).toBe(1050);
    expect(seen[0]).toMatch(/^Title 10(50|51)$/);
    expect(seen.at(-1)).toBe("Title 1");

    const movies = await me.request("/api/memories?type=movie&limit=5");
    expect(movies.body.memories.map((m: { type: string }) => m.type)).toEqual(Array(5).fill("movie"));
    expect(movies.body.nextCursor).toEqual(expect.any(String));
  });

  it("filters by the time a memory was learned and refuses a bad cursor or range", async () => {
    const me = await signedIn();
    await seedMemories(me.person, [
      { type: "book", name: "Old Book", createdAt: "2023-05-01T10:00:00Z" },
      { type: "book", name: "March Book", createdAt: "2024-03-10T10:00:00Z" },
      { type: "place", name: "Kyoto", createdAt: "2024-03-20T10:00:00Z" },
    ]);
    const march = await me.request("/api/memories?from=2024-03-01T00:00:00Z&to=2024-04-01T00:00:00Z");
    expect(march.body.memories.map((m: { name: string }) => m.name)).toEqual(["Kyoto", "March Book"]);
    expect(march.body.memories[0]?.source).toMatchObject({ kind: "web", excerpt: "I read Kyoto" });
    const searched = await me.request("/api/memories?q=old&to=2024-01-01T00:00:00Z");
    expect(searched.body.memories.map((m: { name: string }) => m.name)).toEqual(["Old Book"]);
    expect((await me.request("/api/memories?cursor=bm9wZQ")).status).toBe(400);
    expect((await me.request("/api/memories?from=2024-04-01T00:00:00Z&to=2024-03-01T00:00:00Z")).status).toBe(400);
    expect((await me.request("/api/memories?from=yesterday")).status).toBe(400);
    const types = await me.request("/api/memories/types");
    expect(types.body.types).toEqual([
      { type: "book", count: 2 },
      { type: "place", count: 1 },
    ]);
  });

  it("filters by when a memory happened, else when it was told, and answers both dates", async () => {
    const me = await signedIn();
    await seedMemories(me.person, [
      { type: "trip", name: "Lisbon Trip", createdAt: "2024-03-15T10:00:00Z", happenedAt: "2019-07-01T10:00:00Z" },
      { type: "book", name: "Told In March", createdAt: "2024-03-16T10:00:00Z" },
    ]);
    const march = await me.request("/api/memories?from=2024-03-01T00:00:00Z&to=2024-04-01T00:00:00Z");
    expect(march.body.memories.map((m: { name: string }) => m.name)).toEqual(["Told In March"]);
    const summer2019 = await me.request("/api/memories?from=2019-07-01T00:00:00Z&to=2019-08-01T00:00:00Z");
    expect(summer2019.body.memories).toEqual([
      expect.objectContaining({ name: "Lisbon Trip", toldAt: "2024-03-15T10:00:00.000Z", happenedAt: "2019-07-01T10:00:00.000Z" }),
    ]);
  });
});

describe("GET /api/memories/:id", () => {
  it("shows where and when a memory was learned, its relations and its events", async () => {
    const me = await signedIn();
    const [dune, herbert] = await seedMemories(me.person, [
      { type: "book", name: "Dune", createdAt: "2024-02-02T09:30:00Z", kind: "telegram", text: "I just finished Dune" },
      { type: "person", name: "Frank Herbert", createdAt: "2024-02-02T09:31:00Z" },
    ]);
    await testDatabase().withUser(me.person.id, async (tx) => {
      await tx.execute(sql`insert into edges (user_id, from_id, to_id, type) values (${me.person.id}, ${dune}, ${herbert}, 'written_by')`);
      await tx.execute(sql`insert into events (user_id, kind, occurred_at, payload, status, entity_ids)
        values (${me.person.id}, 'reminder', '2024-02-09T08:00:00Z', '{"text":"lend Dune to Sam"}'::jsonb, 'scheduled', array[${dune}]::uuid[])`);
    });
    const { status, body } = await me.request(`/api/memories/${dune}`);
    expect(status).toBe(200);
    expect(body.memory).toMatchObject({ id: dune, name: "Dune", type: "book", status: "active", createdAt: "2024-02-02T09:30:00.000Z" });
    expect(body.memory.source).toMatchObject({ kind: "telegram", excerpt: "I just finished Dune", at: "2024-02-02T09:30:00.000Z" });
    expect(body.relations).toEqual([
      expect.objectContaining({
        type: "written_by",
        direction: "out",
        other: { id: herbert, type: "person", name: "Frank Herbert", status: "active" },
        until: null,
      }),
    ]);
    expect(body.events).toEqual([
      expect.objectContaining({
        kind: "reminder",
        status: "scheduled",
        occurredAt: "2024-02-09T08:00:00.000Z",
        payload: { text: "lend Dune to Sam" },
      }),
    ]);
    const fromHerbert = await me.request(`/api/memories/${herbert}`);
    expect(fromHerbert.body.relations[0]).toMatchObject({ direction: "in", other: { id: dune, name: "Dune" } });
    expect((await me.request(`/api/memories/${crypto.randomUUID()}`)).status).toBe(404);
    expect((await me.request("/api/memories/not-a-uuid")).status).toBe(400);
  });
});

describe("PATCH /api/memories/:id", () => {
  it("edits name, type and details; the list and search see the new name", async () => {
    const me = await signedIn();
    const [id] = await seedMemories(me.person, [{ type: "book", name: "Dune", createdAt: "2024-02-02T09:30:00Z" }]);
    const edited = await me.patch(id!, { name: "Dune Messiah", type: "Book", properties: { author: "Frank Herbert", rating: 4 } });
    expect(edited.status).toBe(200);
    expect(edited.body.memory).toMatchObject({
      id,
      name: "Dune Messiah",
      type: "book",
      properties: { author: "Frank Herbert", rating: 4 },
    });
    const found = await me.request("/api/memories?q=messiah");
    expect(found.body.memories.map((m: { name: string }) => m.name)).toEqual(["Dune Messiah"]);
  });

  it("answers 400 for invalid edits, 409 for a (type, name) that another memory has, 404 for others' ids", async () => {
    const me = await signedIn();
    const stranger = await signedIn();
    const [dune, emma] = await seedMemories(me.person, [
      { type: "book", name: "Dune", createdAt: "2024-02-02T09:30:00Z" },
      { type: "book", name: "Emma", createdAt: "2024-02-03T09:30:00Z" },
    ]);
    for (const body of [
      {},
      { name: "" },
      { type: "Not A Type!" },
      { name: "x".repeat(201) },
      { colour: "red" },
      { properties: { author: { nested: true } } },
    ]) {
      const response = await me.patch(dune!, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error.code).toBe("bad_request");
    }
    const notJson = await call(`/api/memories/${dune}`, {
      method: "PATCH",
      headers: { cookie: me.cookie, origin: ORIGIN, "content-type": "application/json" },
      body: "{",
    });
    expect(notJson.status).toBe(400);

    const collision = await me.patch(dune!, { name: " emma " });
    expect(collision.status).toBe(409);
    expect(collision.body.error).toMatchObject({ code: "conflict", message: expect.stringContaining("Emma") });
    // A forgotten memory still holds its (type, name): a capture would revive it.
    expect((await me.request(`/api/memories/${emma}`, { method: "DELETE" })).status).toBe(200);
    expect((await me.patch(dune!, { name: "Emma" })).status).toBe(409);
    // Same key, another spelling of the memory's own name, is fine.
    expect((await me.patch(dune!, { name: "DUNE" })).body.memory.name).toBe("DUNE");

    expect((await stranger.patch(dune!, { name: "Mine now" })).status).toBe(404);
    expect((await stranger.request(`/api/memories/${dune}`)).status).toBe(404);
    expect((await me.request(`/api/memories/${dune}`)).body.memory.name).toBe("DUNE");

    const crossSite = await call(`/api/memories/${dune}`, {
      method: "PATCH",
      headers: { cookie: me.cookie, origin: "https://evil.example", "content-type": "application/json" },
      body: JSON.stringify({ name: "Pwned" }),
    });
    expect(crossSite.status).toBe(403);
  });
});

describe("forget and restore", () => {
  it("DELETE hides a memory, POST /restore brings it back; neither works on another person's memory", async () => {
    const me = await signedIn();
    const stranger = await signedIn();
    const [dune] = await seedMemories(me.person, [{ type: "book", name: "Dune", createdAt: "2024-02-02T09:30:00Z" }]);
    expect((await stranger.request(`/api/memories/${dune}`, { method: "DELETE" })).status).toBe(404);
    expect((await me.request(`/api/memories/${dune}`, { method: "DELETE" })).status).toBe(200);
    expect((await me.request("/api/memories")).body.memories).toEqual([]);
    expect((await me.request(`/api/memories/${dune}`)).body.memory.status).toBe("archived");

    expect((await stranger.request(`/api/memories/${dune}/restore`, { method: "POST" })).status).toBe(404);
    expect((await me.request(`/api/memories/${dune}/restore`, { method: "POST" })).status).toBe(200);
    expect((await me.request("/api/memories")).body.memories.map((m: { name: string }) => m.name)).toEqual(["Dune"]);
    // Restoring what is not forgotten is a 404, not a silent success.
    expect((await me.request(`/api/memories/${dune}/restore`, { method: "POST" })).status).toBe(404);
  });

  it("lists, details and types only ever show the signed-in person's memories", async () => {
    const me = await signedIn();
    const other = await signedIn();
    await seedMemories(me.person, [{ type: "book", name: "Mine", createdAt: "2024-02-02T09:30:00Z" }]);
    const [theirs] = await seedMemories(other.person, [{ type: "secret", name: "Theirs", createdAt: "2024-02-02T09:30:00Z" }]);
    expect((await me.request("/api/memories")).body.memories.map((m: { name: string }) => m.name)).toEqual(["Mine"]);
    expect((await me.request("/api/memories?q=theirs")).body.memories).toEqual([]);
    expect((await me.request("/api/memories/types")).body.types).toEqual([{ type: "book", count: 1 }]);
    expect((await me.request(`/api/memories/${theirs}`)).status).toBe(404);
    expect((await me.request(`/api/memories/${theirs}/restore`, { method: "POST" })).status).toBe(404);
  });
});
