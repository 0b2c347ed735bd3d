// Guards imports of conversations from other assistants (issue 30), end to end in workerd: the web
// app's calls (create, batches, start), then memory-consolidate's run on memory/import.requested driven
// the way Inngest drives it, with the offline model. The person's "I just finished reading Piranesi" in
// a ChatGPT conversation becomes a book told that day, with the conversation as its source; the
// assistant's suggestion does not; facts are dated when they were said, and an older one imported
// later is history, not a correction; sending and starting twice reads nothing twice; a cancel drops
// what was not read; bad batches are refused with why; another person's import is not found.
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { DEFAULT_IMPORT_MODEL_CALLS_PER_DAY } from "../../platform/config";
import { readChatGpt, readClaude, type ImportedConversation } from "../../platform/conversation-imports";
import { chatGptConversation } from "../setup/chatgpt-export";
import { call, newPerson, sessionCookie, testDatabase } from "./helpers";
import { drive } from "./workflow-drive";

const T = 1714723200; // 2024-05-03T08:00:00Z
const CHATGPT = readChatGpt([
  chatGptConversation("c0ffee00-0000-4000-8000-0000000000a1", "Trip ideas", T, [
    ["user", "I just finished reading Piranesi by Susanna Clarke", T + 10],
    ["assistant", "You might like The Name of the Wind by Patrick Rothfuss", T + 20],
  ]),
]);

const CLAUDE = readClaude([
  {
    uuid: "5f1e0000-0000-4000-8000-0000000000b1",
    name: "Moving",
    created_at: "2023-01-10T09:00:00Z",
    chat_messages: [{ uuid: "1", sender: "human", text: "I live in Berlin", created_at: "2023-01-10T09:00:00Z" }],
  },
]);

function api(cookie: string, path: string, init: { method?: string; body?: unknown } = {}) {
  return call(`/api/imports${path}`, {
    method: init.method ?? "GET",
    headers: { cookie, origin: "https://soma.test", "content-type": "application/json" },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
}

async function imported(cookie: string, conversations: ImportedConversation[]) {
  const origin = conversations[0]!.origin;
  const created = await api(cookie, "", { method: "POST", body: { origin, conversations: conversations.length, from: null, to: null } });
  expect(created.status).toBe(201);
  const { import: job } = (await created.json()) as { import: { id: string } };
  const batch = await api(cookie, `/${job.id}/conversations`, { method: "POST", body: { conversations } });
  expect(batch.status).toBe(200);
  return job.id;
}

async function start(cookie: string, id: string, userId: string) {
  expect((await api(cookie, `/${id}/start`, { method: "POST" })).status).toBe(200);
  // What Inngest would run on the event the start sent.
  return drive("memory-consolidate", { name: "memory/import.requested", id: `import-${id}`, data: { userId, importId: id } });
}

const rows = (userId: string, query: ReturnType<typeof sql>) =>
  testDatabase().withUser(userId, (tx) => tx.execute(query)) as unknown as Promise<Array<Record<string, unknown>>>;

describe("importing conversations from ChatGPT and Claude", () => {
  it("makes the person's book a memory told that day, from that conversation; the assistant's suggestion stays out", async () => {
    const person = await newPerson("import");
    const cookie = await sessionCookie(person);
    const id = await imported(cookie, CHATGPT);
    const { output } = await start(cookie, id, person.id);
    expect(output).toEqual({ read: 1 });
    const memories = await rows(
      person.id,
      sql`select e.type, e.name, e.told_at, s.kind, s.payload->>'title' as title, s.payload->>'text' as text
          from entities e join sources s on s.id = e.source_id order by e.name`,
    );
    expect(memories).toEqual([
      {
        type: "book",
        name: "Piranesi",
        told_at: "2024-05-03 08:00:10+00",
        kind: "chatgpt",
        title: "Trip ideas",
        text: "I just finished reading Piranesi by Susanna Clarke",
      },
    ]);
    const progress = (await (await api(cookie, "")).json()) as { imports: Array<Record<string, unknown>> };
    expect(progress.imports[0]).toMatchObject({
      id,
      origin: "chatgpt",
      state: "done",
      conversations: 1,
      received: 1,
      done: 1,
      userMessages: 1,
      memories: 1,
    });
    // The conversation's words are gone once read; its title and start stay.
    const [conversation] = await rows(
      person.id,
      sql`select payload from sources where kind = 'chatgpt' and external_id = 'c0ffee00-0000-4000-8000-0000000000a1'`,
    );
    expect(conversation?.payload).toEqual({
      title: "Trip ideas",
      startedAt: "2024-05-03T08:00:00.000Z",
      messages: 2,
      import: { id, state: "done" },
    });

    // The same export again: nothing new arrives, nothing is read twice.
    const again = await imported(cookie, CHATGPT);
    expect((await start(cookie, again, person.id)).output).toEqual({ read: 0 });
    expect(await rows(person.id, sql`select count(*)::int as n from entities`)).toEqual([{ n: 1 }]);
  });

  it("dates facts when they were said: an older one imported later becomes history", async () => {
    const person = await newPerson("import-facts");
    const cookie = await sessionCookie(person);
    await testDatabase().withUser(person.id, (tx) =>
      tx.execute(sql`insert into facts (user_id, statement, category, subject, confidence, told_at)
                     values (${person.id}, 'Lives in Lisbon', 'location', 'home city', 1, '2026-01-01T00:00:00Z')`),
    );
    const id = await imported(cookie, CLAUDE);
    await start(cookie, id, person.id);
    const facts = await rows(
      person.id,
      sql`select f.statement, f.told_at, (select statement from facts n where n.id = f.superseded_by) as replaced_by from facts f order by f.told_at`,
    );
    expect(facts).toEqual([
      { statement: "Lives in Berlin", told_at: "2023-01-10 09:00:00+00", replaced_by: "Lives in Lisbon" },
      { statement: "Lives in Lisbon", told_at: "2026-01-01 00:00:00+00", replaced_by: null },
    ]);
  });

  it("cancels: what was not read is dropped, and the import takes nothing more", async () => {
    const person = await newPerson("import-cancel");
    const cookie = await sessionCookie(person);
    const id = await imported(cookie, CHATGPT);
    const cancelled = await api(cookie, `/${id}`, { method: "DELETE" });
    expect(((await cancelled.json()) as { import: { state: string } }).import.state).toBe("cancelled");
    expect(await rows(person.id, sql`select count(*)::int as n from sources`)).toEqual([{ n: 0 }]);
    expect((await api(cookie, `/${id}/conversations`, { method: "POST", body: { conversations: CHATGPT } })).status).toBe(409);
    expect((await api(cookie, `/${id}/start`, { method: "POST" })).status).toBe(409);
    // A new import may begin once none is under way.
    expect((await api(cookie, "", { method: "POST", body: { origin: "chatgpt", conversations: 1, from: null, to: null } })).status).toBe(
      201,
    );
    expect((await api(cookie, "", { method: "POST", body: { origin: "chatgpt", conversations: 1, from: null, to: null } })).status).toBe(
      409,
    );
  });

  it("refuses bad batches with why, and another person's import is not found", async () => {
    const person = await newPerson("import-bad");
    const cookie = await sessionCookie(person);
    const id = await imported(cookie, CHATGPT);
    const bad = async (body: unknown, message: RegExp) => {
      const response = await api(cookie, `/${id}/conversations`, { method: "POST", body });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(message);
    };
    await bad({ conversations: [] }, /conversations/);
    await bad({ conversations: CLAUDE }, /from chatgpt; a conversation from claude does not belong/);
    await bad({ conversations: [{ ...CHATGPT[0], messages: [{ role: "system", text: "x", at: "2024-01-01T00:00:00Z" }] }] }, /role/);
    const other = await sessionCookie(await newPerson("import-other"));
    expect((await api(other, `/${id}/start`, { method: "POST" })).status).toBe(404);
    expect((await api(other, `/${id}`, { method: "DELETE" })).status).toBe(404);
    expect((await api(cookie, "/not-an-id/start", { method: "POST" })).status).toBe(400);
  });

  it("stops at the day's budget of model calls, and goes on where it stopped when started again", async () => {
    const person = await newPerson("import-budget");
    const cookie = await sessionCookie(person);
    // Earlier imports of the day spent the budget.
    await testDatabase().withUser(person.id, (tx) =>
      tx.execute(sql`insert into events (user_id, kind, occurred_at, payload, status)
                     values (${person.id}, 'import', now(), ${JSON.stringify({ origin: "chatgpt", calls: DEFAULT_IMPORT_MODEL_CALLS_PER_DAY })}::jsonb, 'done')`),
    );
    const id = await imported(cookie, CHATGPT);
    expect((await start(cookie, id, person.id)).output).toEqual({ read: 0 });
    const progress = (await (await api(cookie, "")).json()) as { imports: Array<{ id: string; state: string }> };
    expect(progress.imports.find((i) => i.id === id)?.state).toBe("stopped");
    expect(await rows(person.id, sql`select count(*)::int as n from entities`)).toEqual([{ n: 0 }]);
    // A day later the budget is back: started again, it reads what waited.
    await testDatabase().withUser(person.id, (tx) =>
      tx.execute(sql`update events set created_at = now() - interval '2 days' where kind = 'import' and status = 'done'`),
    );
    expect((await start(cookie, id, person.id)).output).toEqual({ read: 1 });
    expect(await rows(person.id, sql`select name from entities`)).toEqual([{ name: "Piranesi" }]);
  });

  it("takes pasted saved memories, one a line, as the person's own", async () => {
    const person = await newPerson("import-pasted");
    const cookie = await sessionCookie(person);
    const response = await api(cookie, "/pasted", {
      method: "POST",
      body: { text: "Saved memories\n- I am vegetarian\n- I just finished reading Dune" },
    });
    expect(response.status).toBe(201);
    const { import: job } = (await response.json()) as { import: { id: string; state: string; userMessages: number } };
    expect(job).toMatchObject({ state: "running", userMessages: 2 });
    await drive("memory-consolidate", {
      name: "memory/import.requested",
      id: `import-${job.id}`,
      data: { userId: person.id, importId: job.id },
    });
    expect(await rows(person.id, sql`select type, name from entities`)).toEqual([{ type: "book", name: "Dune" }]);
    expect(await rows(person.id, sql`select statement from facts`)).toEqual([{ statement: "Is vegetarian" }]);
    expect((await api(cookie, "/pasted", { method: "POST", body: { text: "Memories:\n\n" } })).status).toBe(400);
  });
});
