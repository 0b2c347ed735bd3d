// Guards the person's timezone: names and cities resolve to IANA zones (in workerd's ICU), /timezone
// shows and sets it, PUT /api/me/timezone sets it from the web (same origin, 4xx for bad input), a
// sign-in never resets it, each turn's prompt carries the person's name and local time, and a reminder
// written as a local time is stored as the UTC instant it is where the person lives.
import { generateText, isStepCount } from "ai";
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { isoLocal, localToInstant, resolveTimeZone } from "../../platform/local-time";
import { localEmbedder } from "../../agents/integrations/model/embeddings";
import { turnTools } from "../../agents/turn/tools/index";
import type { UserAgent } from "../../agents/user-agent";
import { setTimezone } from "../../db/repositories/people";
import { call, newChatId, newPerson, sessionCookie, testDatabase } from "./helpers";
import { scriptedModel } from "./scripted-model";
import { converse, personOfChat } from "./telegram-updates";

const SAME_ORIGIN = { origin: "https://soma.test" };

/** The timezone in both rows: auth.users (of record) and public.users (the mirror the workflows read). */
async function storedZones(userId: string): Promise<{ auth: string; mirror: string }> {
  const [auth] = (await testDatabase().withAuth((tx) =>
    tx.execute(sql`select timezone from auth.users where id = ${userId}`),
  )) as unknown as Array<{ timezone: string }>;
  const [mirror] = (await testDatabase().withUser(userId, (tx) => tx.execute(sql`select timezone from users`))) as unknown as Array<{
    timezone: string;
  }>;
  return { auth: auth!.timezone, mirror: mirror!.timezone };
}

describe("zone names and cities", () => {
  it("resolves IANA names in any case, the last part of a zone name, and a few well-known cities", () => {
    const cases: Array<[string, string]> = [
      ["Europe/Berlin", "Europe/Berlin"],
      ["europe/berlin", "Europe/Berlin"],
      ["berlin", "Europe/Berlin"],
      ["New York", "America/New_York"],
      ["new_york", "America/New_York"],
      ["sao paulo", "America/Sao_Paulo"],
      ["São Paulo", "America/Sao_Paulo"],
      ["London", "Europe/London"],
      ["Moscow", "Europe/Moscow"],
      ["San Francisco", "America/Los_Angeles"],
      ["Munich", "Europe/Berlin"],
      ["mumbai", "Asia/Kolkata"],
      ["Asia/Kolkata", "Asia/Kolkata"],
      ["utc", "UTC"],
    ];
    for (const [input, zone] of cases) expect(resolveTimeZone(input), input).toBe(zone);
    for (const input of ["Atlantis", "Mars/Olympus_Mons", "+02:00", "GMT+2", "", "x".repeat(100)])
      expect(resolveTimeZone(input), input).toBeNull();
  });

  it("reads a local time as the person's clock, also where the clocks change", () => {
    expect(localToInstant("2026-11-24T09:00", "Europe/Berlin").toISOString()).toBe("2026-11-24T08:00:00.000Z");
    expect(localToInstant("2026-07-01T09:00:00", "Europe/Berlin").toISOString()).toBe("2026-07-01T07:00:00.000Z");
    expect(localToInstant("2026-11-24T09:00", "Asia/Kolkata").toISOString()).toBe("2026-11-24T03:30:00.000Z");
    // 02:30 does not exist on 29 March in Berlin (02:00 → 03:00): it is read as 03:30 summer time.
    expect(localToInstant("2026-03-29T02:30", "Europe/Berlin").toISOString()).toBe("2026-03-29T01:30:00.000Z");
    // 02:30 happens twice on 25 October: the first one (still summer time).
    expect(localToInstant("2026-10-25T02:30", "Europe/Berlin").toISOString()).toBe("2026-10-25T00:30:00.000Z");
    expect(isoLocal(new Date("2026-11-24T23:30:00Z"), "Europe/Berlin")).toBe("2026-11-25T00:30");
  });
});

describe("/timezone in Telegram", () => {
  it("shows the zone with how to set it, sets it from a city, and refuses an unknown one", async () => {
    const chatId = newChatId();
    const replies = await converse(chatId, ["/start", "/timezone", "/timezone são paulo", "/timezone Atlantis", "/timezone"]);
    expect(replies[1]).toMatch(
      /^Your timezone is UTC; it's \w{3} \d{1,2} \w{3}, \d{2}:\d{2} there\.\nSet it with \/timezone <city or zone>/,
    );
    expect(replies[2]).toMatch(/^Your timezone is now America\/Sao_Paulo; it's \w{3} \d{1,2} \w{3}, \d{2}:\d{2} there\./);
    expect(replies[3]).toBe(
      'I don\'t know the timezone "Atlantis". Try a city such as Berlin, New York or São Paulo, or a zone name such as Europe/Lisbon.',
    );
    expect(replies[4]).toMatch(/^Your timezone is America\/Sao_Paulo; /);
    // The local time shown is São Paulo's (UTC−3, no summer time).
    const shown = /, (\d{2}):(\d{2}) there/.exec(replies[4]!)!;
    const expected = new Date(Date.now() - 3 * 3_600_000);
    const minutes = Number(shown[1]) * 60 + Number(shown[2]);
    const diff = Math.abs(minutes - (expected.getUTCHours() * 60 + expected.getUTCMinutes()));
    expect(Math.min(diff, 1440 - diff)).toBeLessThanOrEqual(1);
    expect(await storedZones(await personOfChat(chatId))).toEqual({ auth: "America/Sao_Paulo", mirror: "America/Sao_Paulo" });
  });
});

describe("PUT /api/me/timezone", () => {
  it("sets the zone (GET /api/me shows it), and a later sign-in does not reset it", async () => {
    const person = await newPerson();
    const cookie = await sessionCookie(person);
    const me = async () => (await (await call("/api/me", { headers: { cookie } })).json()) as { timezone: string };
    expect((await me()).timezone).toBe("UTC");

    const response = await call("/api/me/timezone", {
      method: "PUT",
      headers: { cookie, ...SAME_ORIGIN, "content-type": "application/json" },
      body: JSON.stringify({ timezone: "Asia/Tokyo" }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ timezone: "Asia/Tokyo" });
    expect((await me()).timezone).toBe("Asia/Tokyo");
    // A sign-in rewrites the auth row (the mirror copies all of it): the zone lives there, so it stays.
    await testDatabase().withAuth((tx) => tx.execute(sql`update auth.users set display_name = 'Renamed' where id = ${person.id}`));
    expect(await storedZones(person.id)).toEqual({ auth: "Asia/Tokyo", mirror: "Asia/Tokyo" });
  });

  it("answers bad input with a 4xx JSON error and changes nothing", async () => {
    const person = await newPerson();
    const cookie = await sessionCookie(person);
    await setTimezone(testDatabase(), person.id, "Europe/Berlin");
    const put = (body: string, headers: Record<string, string> = {}) =>
      call("/api/me/timezone", {
        method: "PUT",
        headers: { cookie, ...SAME_ORIGIN, "content-type": "application/json", ...headers },
        body,
      });

    const unknown = await put(JSON.stringify({ timezone: "Mars/Olympus_Mons" }));
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toMatchObject({ error: { code: "bad_request", message: expect.stringContaining("Unknown timezone") } });
    expect((await put(JSON.stringify({ timezone: "+02:00" }))).status).toBe(400);
    expect((await put(JSON.stringify({}))).status).toBe(400);
    expect((await put(JSON.stringify({ timezone: "x".repeat(65) }))).status).toBe(400);
    expect((await put("{not json")).status).toBe(400);
    expect((await put("timezone=UTC", { "content-type": "application/x-www-form-urlencoded" })).status).toBe(415);
    expect((await put(JSON.stringify({ timezone: "UTC" }), { origin: "https://evil.example" })).status).toBe(403);
    expect(
      (
        await call("/api/me/timezone", {
          method: "PUT",
          headers: { ...SAME_ORIGIN, "content-type": "application/json" },
          body: JSON.stringify({ timezone: "UTC" }),
        })
      ).status,
    ).toBe(401);
    expect(await storedZones(person.id)).toEqual({ auth: "Europe/Berlin", mirror: "Europe/Berlin" });
  });
});

describe("the turn", () => {
  it("tells the model the person's name and local date and time in their zone", async () => {
    const person = await newPerson("Grace");
    await setTimezone(testDatabase(), person.id, "Pacific/Auckland");
    const model = scriptedModel([{ text: "Hello!" }]);
    const agent = await getAgentByName(env.UserAgent, person.id);
    await runInDurableObject(agent, (instance: UserAgent) => {
      instance.modelOverride = model;
    });
    await agent.enqueueTelegramMessage({
      updateId: Math.floor(Math.random() * 1e9),
      chatId: newChatId(),
      messageId: 1,
      text: "what time is it?",
    });
    await agent.settle();

    const system = model.doStreamCalls[0]!.prompt.find((m) => m.role === "system")!.content as string;
    expect(system).toContain(`You are Soma, ${person.displayName}'s personal assistant`);
    const local = isoLocal(new Date(), "Pacific/Auckland");
    expect(system).toMatch(new RegExp(`where the person is \\(Pacific/Auckland; local time ${local.slice(0, 13)}:\\d{2}\\)`));
    expect(system).toContain("without an offset");
  });

  it("schedule_create reads a local time in the person's zone; an explicit offset or Z wins", async () => {
    const person = await newPerson();
    const year = new Date().getUTCFullYear() + 1;
    const result = await generateText({
      model: scriptedModel([
        { tool: "schedule_create", input: { text: "Dentist", at: `${year}-11-24T09:00` } },
        { tool: "schedule_create", input: { text: "Call with Tokyo", at: `${year}-11-24T09:00:00+09:00` } },
        { tool: "schedule_create", input: { text: "Deploy", at: `${year}-11-24T09:00:00Z` } },
        { tool: "schedule_create", input: { text: "Too vague", at: "tomorrow at nine" } },
        { text: "ok" },
      ]),
      tools: turnTools({
        db: testDatabase(),
        userId: person.id,
        embedder: localEmbedder,
        source: { kind: "test", externalId: crypto.randomUUID(), payload: { text: "remind me" } },
        timezone: "America/New_York",
      }),
      stopWhen: isStepCount(5),
      prompt: "remind me",
    });
    const outputs = result.steps.flatMap((step) => [
      ...step.toolResults.map((r) => r.output),
      ...step.content.filter((p) => p.type === "tool-error").map(() => "tool-error"),
    ]);
    expect(outputs).toHaveLength(4);
    expect(outputs.at(-1)).toBe("tool-error");
    const rows = (await testDatabase().withUser(person.id, (tx) =>
      tx.execute(sql`select payload ->> 'text' as text, occurred_at from events where kind = 'reminder' order by payload ->> 'text'`),
    )) as unknown as Array<{ text: string; occurred_at: string | Date }>;
    expect(rows.map((r) => [r.text, new Date(r.occurred_at).toISOString()])).toEqual([
      ["Call with Tokyo", `${year}-11-24T00:00:00.000Z`],
      ["Dentist", `${year}-11-24T14:00:00.000Z`], // 09:00 in New York (UTC−5 in November)
      ["Deploy", `${year}-11-24T09:00:00.000Z`],
    ]);
  });
});
