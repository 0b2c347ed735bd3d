// Guards issue 27's "where things go": the person chooses per kind (reminders, the morning brief, the
// weekly review: Telegram, push or both; replies while away: on or off) with PUT /api/me/notify, GET
// /api/me shows it, the choice reaches the row the workflows read (the auth mirror), and the one
// function that decides (channelsFor) honours it, falling back to every channel there is when a choice
// reaches none, so a reminder is never lost to a setting.
import { describe, expect, it } from "vitest";
import { channelsFor, notifyChoices } from "../../agents/integrations/channels";
import { contactOf } from "../../db/repositories/digest";
import { call, newPerson, sessionCookie, testDatabase } from "./helpers";

const SAME_ORIGIN = { origin: "https://soma.test" };

describe("where things go", () => {
  it("decides the channels per kind, every channel by default, never none for a reminder", () => {
    const both = { telegram: true, push: true };
    expect(channelsFor("reminder", {}, both)).toEqual(both);
    expect(channelsFor("reminder", { reminder: "telegram" }, both)).toEqual({ telegram: true, push: false });
    expect(channelsFor("brief", { brief: "push" }, both)).toEqual({ telegram: false, push: true });
    // A choice that reaches nothing the person has falls back to what they have.
    expect(channelsFor("reminder", { reminder: "telegram" }, { telegram: false, push: true })).toEqual({ telegram: false, push: true });
    expect(channelsFor("review", { review: "push" }, { telegram: true, push: false })).toEqual({ telegram: true, push: false });
    expect(channelsFor("reply", { reply: "off" }, { telegram: false, push: true })).toEqual({ telegram: false, push: false });
    // A stored value that no longer parses counts as unset.
    expect(notifyChoices({ reminder: "pigeon" })).toEqual({ reminder: "all", brief: "all", review: "all", reply: "all" });
  });

  it("is set with PUT /api/me/notify, shown by GET /api/me, and reaches the row the workflows read", async () => {
    const person = await newPerson("notify");
    const cookie = await sessionCookie(person);
    const me = async () => ((await (await call("/api/me", { headers: { cookie } })).json()) as { notify: Record<string, string> }).notify;
    expect(await me()).toEqual({ reminder: "all", brief: "all", review: "all", reply: "all" });
    const put = (body: unknown, origin = SAME_ORIGIN.origin) =>
      call("/api/me/notify", {
        method: "PUT",
        headers: { cookie, origin, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const saved = await put({ reminder: "push", reply: "off" });
    expect(saved.status).toBe(200);
    expect(await saved.json()).toEqual({ notify: { reminder: "push", brief: "all", review: "all", reply: "off" } });
    expect(await put({ brief: "telegram" }).then((r) => r.json())).toEqual({
      notify: { reminder: "push", brief: "telegram", review: "all", reply: "off" },
    });
    expect(await me()).toEqual({ reminder: "push", brief: "telegram", review: "all", reply: "off" });
    const mirrored = await testDatabase().withUser(person.id, contactOf);
    expect(mirrored?.notify).toEqual({ reminder: "push", brief: "telegram", reply: "off" });
    for (const bad of [{ reminder: "off" }, { reminder: "pigeon" }, { unknown: "all" }, "all"]) {
      const refused = await put(bad);
      expect(refused.status, JSON.stringify(bad)).toBe(400);
    }
    expect((await put({ review: "push" }, "https://evil.example")).status).toBe(403);
    expect(await me()).toEqual({ reminder: "push", brief: "telegram", review: "all", reply: "off" });
  });
});
