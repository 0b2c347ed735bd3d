// Guards issue 25's MCP doors: a write under a read-only grant answered as the MCP authorization spec says
// (403 insufficient_scope, which the official client turns into a step-up), Disconnect refusing the app at
// once even where KV still serves its token, /mcp bodies capped and shape-scanned before the MCP library
// parses them, batches refused, every tool spending the budget its work costs, every answer within
// 24,000 characters with its fences whole, and the OAuth doors anyone may knock on (session first,
// limited per address, unused registrations removed by the hourly upkeep).
import { env } from "cloudflare:workers";
import { createScheduledController } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { getAgentByName } from "agents";
import { captureEntity, recordSource } from "../../db/repositories/memory";
import { grantOf } from "../../worker/mcp/apps";
import { oauthApi } from "../../worker/mcp/oauth";
import { MAX_ANSWER_CHARS } from "../../worker/mcp/tools";
import { oauthUpkeep, UNUSED_CLIENT_MS } from "../../worker/mcp/upkeep";
import worker from "../../worker/index";
import { toolAnswer } from "../setup/mcp-answer";
import { call, newPerson, sessionCookie, testDatabase } from "./helpers";
import { authorizeUrl, connectApp, decide, mcpClient, openConsent, pkcePair, registerClient } from "./mcp-flow";

const RPC_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** A raw JSON-RPC POST to /mcp with `token`. */
function post(token: string, body: string, headers: Record<string, string> = {}) {
  return call("/mcp", { method: "POST", headers: { ...RPC_HEADERS, authorization: `Bearer ${token}`, ...headers }, body });
}

const toolCall = (name: string, args: Record<string, unknown>, id = 1) =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });

describe("scopes as standard clients expect them", () => {
  it("answers a write under a read-only grant with 403 insufficient_scope naming both scopes, and changes nothing", async () => {
    const person = await newPerson("mcp-step-up");
    const { tokens } = await connectApp(await sessionCookie(person), ["memory:read"]);
    const response = await post(tokens.access_token, toolCall("add_memory", { type: "book", name: "Dune" }));
    expect(response.status).toBe(403);
    const challenge = response.headers.get("www-authenticate") ?? "";
    expect(challenge).toMatch(/^Bearer /);
    expect(challenge).toContain('error="insufficient_scope"');
    expect(challenge).toContain('scope="memory:read memory:write"');
    expect(challenge).toContain('resource_metadata="https://soma.test/.well-known/oauth-protected-resource/mcp"');
    expect(await response.json()).toMatchObject({ error: "insufficient_scope" });

    // The official client reads the challenge and asks to step up (here, with no browser, it stops there).
    const client = await mcpClient(tokens.access_token);
    await expect(client.callTool({ name: "forget_memory", arguments: { id: crypto.randomUUID() } })).rejects.toThrow(
      /Insufficient scope: required "memory:read memory:write"/,
    );
    const listed = toolAnswer(await client.callTool({ name: "list_memories", arguments: {} }));
    expect(listed.json).toMatchObject({ memories: [] });
  });

  it("opens the consent page with write ticked for the scope a standard client takes from the 401 challenge", async () => {
    const person = await newPerson("mcp-both");
    const unauthenticated = await call("/mcp", { method: "POST", headers: RPC_HEADERS, body: "{}" });
    const asked = /scope="([^"]+)"/.exec(unauthenticated.headers.get("www-authenticate") ?? "")?.[1] ?? "";
    expect(asked).toBe("memory:read memory:write");
    const client = await registerClient("Claude");
    const { challenge } = await pkcePair();
    const consent = await openConsent(authorizeUrl(client, challenge, asked), await sessionCookie(person));
    expect(consent.html).toMatch(/value="memory:write"\s+checked/);
  });
});

describe("Disconnect", () => {
  it("refuses the app's next call although KV still holds its token (as an edge cache would)", async () => {
    const person = await newPerson("mcp-cached");
    const { tokens } = await connectApp(await sessionCookie(person), ["memory:read"]);
    const client = await mcpClient(tokens.access_token);
    await client.listTools();
    // Only the agent hears of it: the grant and its token are still in KV.
    const grantId = grantOf(tokens.access_token)!;
    await (await getAgentByName(env.UserAgent, person.id)).disconnectApp(grantId);
    expect(await oauthApi(env).unwrapToken(tokens.access_token)).not.toBeNull();
    const refused = await post(tokens.access_token, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }));
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });
});

describe("the /mcp body", () => {
  it("is capped before the MCP library parses it, its shape scanned, and a batch refused", async () => {
    const person = await newPerson("mcp-bombs");
    const { tokens } = await connectApp(await sessionCookie(person), ["memory:read", "memory:write"]);
    const big = toolCall("search_memory", { query: "x".repeat(3_900_000) });
    expect((await post(tokens.access_token, big)).status).toBe(413);
    const deep = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_memory","arguments":${"[".repeat(40)}${"]".repeat(40)}}}`;
    const deepAnswer = await post(tokens.access_token, deep);
    expect(deepAnswer.status).toBe(400);
    const wide = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: { many: Array(3000).fill(1) } } });
    expect((await post(tokens.access_token, wide)).status).toBe(413);
    const batch = `[${toolCall("search_memory", { query: "a" }, 1)},${toolCall("search_memory", { query: "b" }, 2)}]`;
    const batched = await post(tokens.access_token, batch, { "mcp-protocol-version": "2025-06-18" });
    expect(batched.status).toBe(400);
    expect(await batched.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32600, message: expect.stringMatching(/batches/) } });
    // An ordinary call still works.
    const ok = toolAnswer(await (await mcpClient(tokens.access_token)).callTool({ name: "list_memories", arguments: {} }));
    expect(ok.isError).toBe(false);
  });
});

describe("budgets and answers", () => {
  it("spends the search budget on list, get and profile, and chat's on add_memory with words", async () => {
    const person = await newPerson("mcp-budget");
    const { tokens } = await connectApp(await sessionCookie(person), ["memory:read", "memory:write"]);
    const client = await mcpClient(tokens.access_token);
    const agent = await getAgentByName(env.UserAgent, person.id);
    // 58 of the 60 searches a minute are spent elsewhere (the memory page, say).
    for (let i = 0; i < 58; i++) await agent.spend("search");
    const answers = [];
    for (const name of ["list_memories", "get_profile", "get_memory"]) {
      answers.push(toolAnswer(await client.callTool({ name, arguments: name === "get_memory" ? { id: crypto.randomUUID() } : {} })));
    }
    expect(answers.map((a) => a.text.startsWith("Rate limited"))).toEqual([false, false, true]);
    // 20 chat messages a minute: a person who already sent them cannot have an app send words to the model.
    for (let i = 0; i < 20; i++) await agent.spend("chat");
    const words = toolAnswer(await client.callTool({ name: "add_memory", arguments: { text: "I moved to Lisbon" } }));
    expect(words.isError).toBe(true);
    expect(words.text).toMatch(/^Rate limited/);
  });

  it("keeps get_memory of a memory with huge details within 24,000 characters, values shortened inside their fences", async () => {
    const person = await newPerson("mcp-huge");
    const details = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`detail${i}`, `${i} ${"word ".repeat(4000)}`]));
    const id = await testDatabase().withUser(person.id, async (tx) => {
      const sourceId = await recordSource(tx, person.id, { kind: "gmail", externalId: crypto.randomUUID(), payload: { text: "x" } });
      return (await captureEntity(tx, person.id, { type: "note", name: "Huge", properties: details, embedding: null, sourceId })).entityId;
    });
    const { tokens } = await connectApp(await sessionCookie(person), ["memory:read"]);
    const got = toolAnswer(await (await mcpClient(tokens.access_token)).callTool({ name: "get_memory", arguments: { id } }));
    expect(got.text.length).toBeLessThanOrEqual(MAX_ANSWER_CHARS);
    const memory = (got.json as { memory: { name: string; properties: Record<string, string> }; truncated: string }).memory;
    expect(memory.name).toBe("<email-data>Huge</email-data>");
    expect(Object.keys(memory.properties).length).toBeGreaterThan(10);
    for (const value of Object.values(memory.properties)) {
      expect(value).toMatch(/^<email-data>\d+ (word )*.*…<\/email-data>$/);
    }
    expect((got.json as { truncated: string }).truncated).toMatch(/shortened/);
  });
});

describe("the OAuth doors", () => {
  it("sends a signed-out /authorize to sign in before reading any of it", async () => {
    const response = await call("/authorize?client_id=https%3A%2F%2Fattacker.example%2Fclient.json&response_type=code", {
      redirect: "manual",
    });
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe("/login");
  });

  it("limits registrations per client address, with a JSON 429 and Retry-After", async () => {
    const from = { "cf-connecting-ip": `192.0.2.${Math.floor(Math.random() * 250)}`, "content-type": "application/json" };
    const body = JSON.stringify({ client_name: "Spam", redirect_uris: ["http://127.0.0.1:9/cb"], token_endpoint_auth_method: "none" });
    const statuses: number[] = [];
    for (let i = 0; i < 22; i++) statuses.push((await call("/oauth/register", { method: "POST", headers: from, body })).status);
    expect(statuses.slice(0, 20)).toEqual(Array(20).fill(201));
    expect(statuses.slice(20)).toEqual([429, 429]);
    const refused = await call("/oauth/register", { method: "POST", headers: from, body });
    expect(refused.headers.get("retry-after")).toBe("60");
    expect(await refused.json()).toMatchObject({ error: "rate_limited" });
    expect((await registerClient("Someone else")).client_id).toBeTruthy();
  });

  it("removes registrations nobody connected within a day, keeps connected ones, and purges on the hourly trigger", async () => {
    const person = await newPerson("mcp-upkeep");
    const cookie = await sessionCookie(person);
    const unused = await registerClient("Never connected");
    const used = await registerClient("Connected");
    const { challenge } = await pkcePair();
    const consent = await openConsent(authorizeUrl(used, challenge, "memory:read"), cookie);
    expect((await decide(cookie, consent, "approve")).location).toContain("code=");

    // The Worker's scheduled handler runs the upkeep (now, so nothing is old enough yet).
    await worker.scheduled(createScheduledController({ cron: "23 * * * *" }), env);
    const oauth = oauthApi(env);
    expect(await oauth.lookupClient(unused.client_id)).not.toBeNull();

    // Both registered a day ago (the records as the provider keeps them, dated back), then the upkeep
    // runs until its sweep has been through every registration.
    for (const { client_id } of [unused, used]) {
      const record = (await env.OAUTH_KV.get(`client:${client_id}`, { type: "json" })) as { registrationDate: number };
      record.registrationDate -= (UNUSED_CLIENT_MS + 60_000) / 1000;
      await env.OAUTH_KV.put(`client:${client_id}`, JSON.stringify(record));
    }
    for (let run = 0; run < 200 && (await oauth.lookupClient(unused.client_id)) !== null; run++) await oauthUpkeep(env);
    expect(await oauth.lookupClient(unused.client_id)).toBeNull();
    expect(await oauth.lookupClient(used.client_id)).not.toBeNull();
  });
});
