// Guards the web channel to the agent: GET /api/agent upgrades to the signed-in person's own agent (the
// AIChatAgent chat protocol), streams the turn, and refuses without a session.
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openSocket, said } from "./chat-socket";
import { call, newPerson, readChatStream, sessionCookie, testDatabase } from "./helpers";

describe("GET /api/agent", () => {
  it("refuses without a session (401 JSON), before reaching any agent", async () => {
    const response = await call("/api/agent", { headers: { upgrade: "websocket" } });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ error: { code: "unauthorized" } });
  });

  it("streams a chat turn from the person's own agent and captures the memory", async () => {
    const person = await newPerson();
    const client = await openSocket(await sessionCookie(person));
    const requestId = client.send([said("I just finished reading Dune", "m1")]);
    await client.end(requestId);
    const chunks = client.frames
      .filter((f) => f.type === "cf_agent_use_chat_response" && f.id === requestId && f.body)
      .map((f) => JSON.parse(f.body!) as { type: string; toolName?: string });
    expect(chunks.some((c) => c.type === "tool-input-available" && c.toolName === "memory_capture")).toBe(true);
    expect(client.text(requestId)).toBe("Noted: Dune (book). I'll remember it.");
    client.socket.close();

    const rows = (await testDatabase().withUser(person.id, (tx) =>
      tx.execute(sql`select type, name from entities`),
    )) as unknown as unknown[];
    expect(rows).toEqual([{ type: "book", name: "Dune" }]);
  });
});

describe("POST /api/chat with a session", () => {
  it("runs a turn in the person's conversation and answers with the reply", async () => {
    const person = await newPerson();
    const cookie = await sessionCookie(person);
    const post = (message: string) =>
      call("/api/chat", { method: "POST", headers: { cookie, "content-type": "application/json" }, body: JSON.stringify({ message }) });
    const first = await post("I visited Kyoto");
    expect(first.status).toBe(200);
    expect(first.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(first.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1");
    const streamed = await readChatStream(first);
    expect(streamed.text).toBe("Noted: Kyoto (place). I'll remember it.");
    expect(streamed.chunks.some((c) => c.type === "tool-input-available" && c.toolName === "memory_capture")).toBe(true);
    expect(streamed.chunks.filter((c) => c.type === "text-delta").length).toBeGreaterThan(1);
    const second = await post("which places did I visit?");
    expect((await readChatStream(second)).text).toBe("Your places: Kyoto.");
  });

  it("answers 429 past 20 messages a minute", async () => {
    const cookie = await sessionCookie(await newPerson());
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) {
      const response = await call("/api/chat", {
        method: "POST",
        headers: { cookie, "content-type": "application/json" },
        body: '{"message":"hi"}',
      });
      statuses.push(response.status);
      await response.body?.cancel();
    }
    expect(statuses.slice(0, 20).every((s) => s === 200)).toBe(true);
    expect(statuses[20]).toBe(429);
  });
});
