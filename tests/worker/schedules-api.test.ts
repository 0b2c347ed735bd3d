// Guards issue 27's repeating reminders on the web (inside workerd, the Worker's routes): GET
// /api/reminders lists each with its rule in words and its next three times, its waiting occurrence
// among the upcoming ones; pause cancels that occurrence and resume brings it back; skipping one time
// plans the next in its place; an edit changes the words of what is waiting; a rule Soma does not keep,
// another person's schedule and another site are refused; delete stops it.
import { describe, expect, it } from "vitest";
import { localEmbedder } from "../../agents/integrations/model/embeddings";
import { turnTools } from "../../agents/turn/tools/index";
import { setTimezone } from "../../db/repositories/people";
import { call, newPerson, sessionCookie, testDatabase } from "./helpers";

const SAME_ORIGIN = { origin: "https://soma.test" };

interface Listed {
  upcoming: Array<{ id: string; text: string; at: string; scheduleId: string | null }>;
  schedules: Array<{ id: string; text: string; status: string; repeats: string; upcoming: string[]; next: string }>;
}

async function everyMonday(userId: string, text: string) {
  const tools = turnTools({
    db: testDatabase(),
    userId,
    embedder: localEmbedder,
    source: { kind: "web", externalId: crypto.randomUUID(), payload: { text: `remind me every Monday at 9 to ${text}` } },
    timezone: "Europe/Berlin",
  });
  const execute = tools.schedule_create!.execute as (input: unknown, options: unknown) => Promise<Record<string, unknown>>;
  const year = new Date().getUTCFullYear() + 1;
  return execute(
    { text, at: `${year}-01-05T09:00`, repeat: "FREQ=WEEKLY;BYDAY=MO" },
    { toolCallId: "t", messages: [{ role: "user", content: `remind me every Monday at 9 to ${text}` }] },
  );
}

describe("repeating reminders on the web", () => {
  it("lists, pauses, resumes, skips a time, edits and deletes", async () => {
    const person = await newPerson("schedules");
    await setTimezone(testDatabase(), person.id, "Europe/Berlin");
    const cookie = await sessionCookie(person);
    const made = await everyMonday(person.id, "water the plants");
    const scheduleId = String(made.scheduleId);
    const list = async () => (await (await call("/api/reminders", { headers: { cookie } })).json()) as Listed;
    const post = (path: string, init: RequestInit = {}) =>
      call(path, { method: "POST", ...init, headers: { cookie, ...SAME_ORIGIN, ...(init.headers ?? {}) } });

    const first = await list();
    expect(first.schedules).toHaveLength(1);
    expect(first.schedules[0]).toMatchObject({
      id: scheduleId,
      text: "water the plants",
      status: "active",
      repeats: "every week on Monday at 09:00",
    });
    const times = first.schedules[0]!.upcoming.map((at) => new Date(at));
    expect(times).toHaveLength(3);
    for (const at of times)
      expect(at.toLocaleString("en-GB", { timeZone: "Europe/Berlin", weekday: "long", hour: "2-digit", minute: "2-digit" })).toBe(
        "Monday 09:00",
      );
    const occurrence = first.upcoming.find((r) => r.scheduleId === scheduleId)!;
    expect(occurrence.at).toBe(first.schedules[0]!.upcoming[0]);

    // Paused: the waiting time is taken away and no time is shown; resumed: the same time waits again.
    const paused = await post(`/api/reminders/schedules/${scheduleId}/pause`);
    expect(((await paused.json()) as { schedule: { status: string; upcoming: string[] } }).schedule).toMatchObject({
      status: "paused",
      upcoming: [],
    });
    expect((await list()).upcoming.filter((r) => r.scheduleId === scheduleId)).toEqual([]);
    const resumed = await post(`/api/reminders/schedules/${scheduleId}/resume`);
    expect(resumed.status).toBe(200);
    expect((await list()).upcoming.filter((r) => r.scheduleId === scheduleId).map((r) => r.at)).toEqual([occurrence.at]);

    // One time skipped: the next Monday waits in its place.
    const resumedTime = (await list()).upcoming.find((r) => r.scheduleId === scheduleId)!;
    const skipped = await call(`/api/reminders/${resumedTime.id}`, { method: "DELETE", headers: { cookie, ...SAME_ORIGIN } });
    expect(skipped.status).toBe(200);
    const afterSkip = (await list()).upcoming.filter((r) => r.scheduleId === scheduleId);
    expect(afterSkip).toHaveLength(1);
    expect(new Date(afterSkip[0]!.at).getTime() - new Date(occurrence.at).getTime()).toBe(7 * 86_400_000);
    // Paused and resumed after a skip: the skipped time stays skipped.
    await post(`/api/reminders/schedules/${scheduleId}/pause`);
    await post(`/api/reminders/schedules/${scheduleId}/resume`);
    expect((await list()).upcoming.filter((r) => r.scheduleId === scheduleId).map((r) => r.at)).toEqual([afterSkip[0]!.at]);

    // Edited words reach what is waiting; a rule Soma does not keep is refused.
    const edited = await call(`/api/reminders/schedules/${scheduleId}`, {
      method: "PATCH",
      headers: { cookie, ...SAME_ORIGIN, "content-type": "application/json" },
      body: JSON.stringify({ text: "water the ferns" }),
    });
    expect(edited.status).toBe(200);
    expect((await list()).upcoming.filter((r) => r.scheduleId === scheduleId).map((r) => r.text)).toEqual(["water the ferns"]);
    // A new time of day: every next time moves to it.
    const moved = await call(`/api/reminders/schedules/${scheduleId}`, {
      method: "PATCH",
      headers: { cookie, ...SAME_ORIGIN, "content-type": "application/json" },
      body: JSON.stringify({ time: "10:30" }),
    });
    const movedSchedule = ((await moved.json()) as { schedule: { repeats: string; upcoming: string[] } }).schedule;
    expect(movedSchedule.repeats).toBe("every week on Monday at 10:30");
    for (const at of movedSchedule.upcoming)
      expect(new Date(at).toLocaleString("en-GB", { timeZone: "Europe/Berlin", weekday: "long", hour: "2-digit", minute: "2-digit" })).toBe(
        "Monday 10:30",
      );
    const badRule = await call(`/api/reminders/schedules/${scheduleId}`, {
      method: "PATCH",
      headers: { cookie, ...SAME_ORIGIN, "content-type": "application/json" },
      body: JSON.stringify({ repeat: "FREQ=SECONDLY" }),
    });
    expect(badRule.status).toBe(400);
    expect(((await badRule.json()) as { error: { message: string } }).error.message).toMatch(/not one Soma keeps/);

    // Another person and another site cannot touch it.
    const stranger = await sessionCookie(await newPerson("stranger"));
    expect(
      (await call(`/api/reminders/schedules/${scheduleId}/pause`, { method: "POST", headers: { cookie: stranger, ...SAME_ORIGIN } }))
        .status,
    ).toBe(404);
    expect(
      (await call(`/api/reminders/schedules/${scheduleId}/pause`, { method: "POST", headers: { cookie, origin: "https://evil.example" } }))
        .status,
    ).toBe(403);

    // Deleted: gone from the list, nothing waiting.
    const deleted = await call(`/api/reminders/schedules/${scheduleId}`, { method: "DELETE", headers: { cookie, ...SAME_ORIGIN } });
    expect(deleted.status).toBe(200);
    const end = await list();
    expect(end.schedules).toEqual([]);
    expect(end.upcoming.filter((r) => r.scheduleId === scheduleId)).toEqual([]);
    expect((await call(`/api/reminders/schedules/${scheduleId}`, { method: "DELETE", headers: { cookie, ...SAME_ORIGIN } })).status).toBe(
      404,
    );
  });
});
