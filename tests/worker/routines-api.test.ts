// Guards issue 27's brief and review on the web (inside workerd, the Worker's routes): GET /api/routines
// answers the defaults with their next time on the person's clock; PUT moves the brief to 07:15 on
// weekdays, turns the review off and back to its default; what cannot be kept (two review days, a time
// that is not one, an unknown field or routine) is a 400 with a JSON body; another site and a request
// without a session are refused; and one person's change is not another's.
import { describe, expect, it } from "vitest";
import { setTimezone } from "../../db/repositories/people";
import { call, newPerson, sessionCookie, testDatabase } from "./helpers";

const SAME_ORIGIN = { origin: "https://soma.test" };

interface Routine {
  name: string;
  on: boolean;
  time: string;
  days: string[];
  repeats: string;
  next: string | null;
  custom: boolean;
}

const clock = (iso: string, zone: string) =>
  new Date(iso).toLocaleString("en-GB", { timeZone: zone, weekday: "long", hour: "2-digit", minute: "2-digit" });

describe("the brief and the review on the web", () => {
  it("shows the defaults, moves the brief, turns the review off and back, and refuses what it cannot keep", async () => {
    const person = await newPerson("routines");
    const bystander = await newPerson("routines-other");
    await setTimezone(testDatabase(), person.id, "America/New_York");
    const cookie = await sessionCookie(person);
    const get = async (who = cookie) =>
      (await (await call("/api/routines", { headers: { cookie: who } })).json()) as Record<string, Routine>;
    const put = (name: string, body: unknown, headers: Record<string, string> = SAME_ORIGIN) =>
      call(`/api/routines/${name}`, {
        method: "PUT",
        headers: { cookie, "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      });

    const defaults = await get();
    expect(defaults.brief).toMatchObject({ name: "brief", on: true, time: "08:00", repeats: "every day at 08:00", custom: false });
    expect(defaults.review).toMatchObject({ name: "review", on: true, time: "18:00", days: ["SU"], repeats: "every Sunday at 18:00" });
    expect(clock(defaults.brief!.next!, "America/New_York")).toMatch(/ 08:00$/);
    expect(clock(defaults.review!.next!, "America/New_York")).toBe("Sunday 18:00");

    const moved = await put("brief", { time: "07:15", days: ["MO", "TU", "WE", "TH", "FR"] });
    expect(moved.status).toBe(200);
    const { routine } = (await moved.json()) as { routine: Routine };
    expect(routine).toMatchObject({ on: true, time: "07:15", repeats: "every weekday at 07:15", custom: true });
    expect(clock(routine.next!, "America/New_York")).toMatch(/^(Monday|Tuesday|Wednesday|Thursday|Friday) 07:15$/);
    expect((await get()).brief).toEqual(routine);

    const off = (await (await put("review", { on: false })).json()) as { routine: Routine };
    expect(off.routine).toMatchObject({ on: false, next: null, custom: true });
    const back = (await (await put("review", { on: true })).json()) as { routine: Routine };
    expect(back.routine).toMatchObject({ on: true, custom: false, repeats: "every Sunday at 18:00" });

    for (const [name, body, message] of [
      ["review", { days: ["FR", "SA"] }, /one day of the week/],
      ["brief", { time: "7:15" }, /time of day/],
      ["brief", { time: "25:00" }, /time of day/],
      ["brief", { days: [] }, /./],
      ["brief", { days: ["XX"] }, /./],
      ["brief", { colour: "red" }, /./],
      ["brief", {}, /on, time or days/],
    ] as const) {
      const refused = await put(name, body);
      expect({ body, status: refused.status }).toEqual({ body, status: 400 });
      expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(message);
    }
    // Only the two routines have that path (the app's JSON answer for a method no route takes there).
    const unknown = await put("lunch", { on: false });
    expect(unknown.status).toBe(405);
    expect(await unknown.json()).toMatchObject({ error: expect.anything() });
    expect((await put("brief", { on: false }, { origin: "https://evil.example" })).status).toBe(403);
    expect((await call("/api/routines")).status).toBe(401);

    // Nothing of this is anyone else's.
    const theirs = await get(await sessionCookie(bystander));
    expect(theirs.brief).toMatchObject({ custom: false, time: "08:00" });
    expect(theirs.review).toMatchObject({ custom: false, on: true });
  });
});
