// Guards "an MCP app connects to Soma with nothing but the URL, and reaches only what the person allowed":
// the official MCP TypeScript client against `npm start` — the 401, discovery, dynamic registration, the
// consent page in Debian's Chromium, the code at the app's loopback callback, tokens and a refresh, tools
// listed and called — plus two people whose apps never see each other's memories, a read-only grant
// refused a write, a replayed code and bad tokens refused, and a revoked app refused at once.
import { createLoginToken, createPerson } from "../../../db/repositories/auth";
import { Database } from "../../../db/database";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toolAnswer } from "../../setup/mcp-answer";
import { connectWithConsent, MemoryOAuthApp, reconnect } from "../mcp-client";
import { openPage, screenshots, signedInPage, startSession, type Session } from "./harness";

let session: Session;
let base: string;
beforeAll(async () => {
  session = await startSession();
  base = session.app.url;
}, 120_000);
afterAll(() => session?.stop());

/** The person's part: the consent page in their browser, write ticked or not, Allow, back at the app. */
async function allow(page: Page, url: URL, options: { write: boolean; shot?: string }): Promise<void> {
  await page.goto(url.toString());
  await page.getByRole("heading", { name: /to your memory\?/ }).waitFor();
  const write = page.getByRole("checkbox", { name: /Add and correct memories/ });
  // What a standard client asks for by itself (the 401's scope: read and write) opens with write ticked:
  // a person who wants it only presses Allow; one who does not unticks it.
  expect(await write.isChecked()).toBe(true);
  if (!options.write) await write.uncheck();
  if (options.shot) await screenshots(page, options.shot);
  await page.getByRole("button", { name: "Allow" }).click();
  await page.waitForURL(/127\.0\.0\.1:\d+\/callback\?/);
}

async function secondPerson(): Promise<{ page: Page; id: string }> {
  const db = new Database(session.app.databaseUrl, { max: 1 });
  const person = await createPerson(db, { displayName: "Second person" });
  // Signed in as a person is: a one-time link (what the bot's /login sends), opened in their own browser.
  const token = await createLoginToken(db, person.id, 600);
  const { page } = await openPage(session.browser);
  await page.goto(`${base}/auth/link/${token}`);
  await page.getByRole("button", { name: "Continue to Soma" }).click();
  await page.waitForURL(`${base}/app`);
  return { page, id: person.id };
}

describe("an MCP app connected through OAuth", () => {
  let first: { page: Page; userId: string };
  let claude: MemoryOAuthApp;

  it("connects with discovery, registration, consent in Chromium and tokens, then lists and calls the tools", async () => {
    const unauthenticated = await fetch(`${base}/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get("www-authenticate")).toContain(
      `resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
    );

    first = await signedInPage(session);
    claude = new MemoryOAuthApp("Claude", (url) => allow(first.page, url, { write: true, shot: "mcp-consent" }));
    await claude.listen();
    const client = await connectWithConsent(base, claude);
    expect(claude.clientInfo?.client_id).toBeTruthy();
    expect(claude.saved?.refresh_token).toBeTruthy();

    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      "add_memory",
      "forget_memory",
      "get_memory",
      "get_profile",
      "list_memories",
      "search_memory",
    ]);
    const added = toolAnswer(await client.callTool({ name: "add_memory", arguments: { type: "book", name: "The Left Hand of Darkness" } }));
    expect(added.isError).toBe(false);
    const found = toolAnswer(await client.callTool({ name: "search_memory", arguments: { query: "Left Hand of Darkness" } }));
    expect(found.text).toContain("The Left Hand of Darkness");
    expect(found.text).toContain("toldAt");

    // Where it came from, as the memory's page shows it.
    await first.page.goto(`${base}/app`);
    const { id } = added.json as { id: string };
    await first.page.goto(`${base}/app/memories?memory=${id}`);
    await first.page.getByText("From Claude, through MCP,").waitFor();
    const detail = (await first.page.evaluate((path) => fetch(path).then((r) => r.json()), `/api/memories/${id}`)) as {
      memory: { source: { kind: string; app?: string } };
    };
    expect(detail.memory.source).toMatchObject({ kind: "mcp", app: "Claude" });
    await client.close();
  });

  it("refreshes an expired access token without asking the person again", async () => {
    const before = claude.saved;
    claude.saved = { ...before!, access_token: "expired-token" };
    claude.onAuthorize = () => Promise.reject(new Error("the person should not be asked again"));
    const client = await reconnect(base, claude);
    const listed = toolAnswer(await client.callTool({ name: "list_memories", arguments: {} }));
    expect(listed.text).toContain("The Left Hand of Darkness");
    expect(claude.saved?.access_token).not.toBe("expired-token");
    expect(claude.saved?.refresh_token).not.toBe(before?.refresh_token);
    await client.close();
  });

  it("gives a second person's read-only app none of the first's memories, and no writes", async () => {
    const second = await secondPerson();
    const notes = new MemoryOAuthApp("Notes", (url) => allow(second.page, url, { write: false }));
    await notes.listen();
    const client = await connectWithConsent(base, notes);
    const search = toolAnswer(await client.callTool({ name: "search_memory", arguments: { query: "Left Hand of Darkness" } }));
    expect(search.text).not.toContain("Darkness");
    const list = toolAnswer(await client.callTool({ name: "list_memories", arguments: {} }));
    expect((list.json as { memories: unknown[] }).memories).toEqual([]);
    // A write is answered 403 insufficient_scope: the official client stops and sends the person to
    // authorize again (step-up), so the call fails; nothing was written.
    await expect(client.callTool({ name: "add_memory", arguments: { type: "book", name: "Dune" } })).rejects.toThrow(
      /Unauthorized|Insufficient scope/,
    );
    await client.close();
    await notes.close();
  });

  it("lists the app in Settings, and refuses it at once once disconnected there", async () => {
    const { page } = first;
    await page.goto(`${base}/app/settings`);
    const apps = page.getByRole("list", { name: "Connected apps" });
    await expect.poll(() => apps.innerText(), { timeout: 10_000 }).toContain("Claude");
    expect(await apps.innerText()).toContain("reads and adds memories");
    expect(await apps.innerText()).toContain("last used");
    await screenshots(page, "mcp-connected-apps");
    await page.getByRole("button", { name: "Disconnect Claude" }).click();
    await expect.poll(() => page.getByText("No apps are connected.").count(), { timeout: 10_000 }).toBe(1);
    const response = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${claude.saved?.access_token}` },
      body: "{}",
    });
    expect(response.status).toBe(401);
    await expect(reconnect(base, claude)).rejects.toThrow();
    await claude.close();
  });

  it("refuses a replayed code and bad tokens", async () => {
    const replay = await fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code: claude.callbacks[0]?.get("code") ?? "",
        redirect_uri: claude.redirectUrl,
        client_id: claude.clientInfo?.client_id ?? "",
        code_verifier: claude.codeVerifier(),
      }),
    });
    expect(replay.status).toBe(400);
    for (const token of ["nonsense", `${claude.saved?.access_token}x`]) {
      const response = await fetch(`${base}/mcp`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: "{}" });
      expect(response.status).toBe(401);
    }
  });
});
