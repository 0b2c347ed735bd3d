// The morning brief and the weekly review, as the person set them (agents/schedules/routines.ts;
// session required, changes same origin):
//   GET /api/routines         {brief, review}: each {name, on, time ("07:15"), days (["MO", …]),
//                                repeats (in words), next (UTC ISO, null when off), custom}
//   PUT /api/routines/:name   {on?, time?, days?} for brief | review → 200 {routine}; 400 for a time or
//                                days that cannot be kept (the review comes on one day). Naming a time or
//                                days turns it on; set back to its default, it is the default again.
// A change spends the person's edit budget (agents/rate-limit.ts): each one plans an occurrence.
import { Hono } from "hono";
import { profileOf } from "../../db/repositories/people";
import { changeRoutine, RoutineChange, routineEvent, routineView, type RoutineName } from "../../agents/schedules/routines";
import { handOver } from "../../agents/local-runs";
import { runInAgent } from "../agent-routing";
import { zoneOrUtc } from "../../platform/local-time";
import { limitBody } from "../body-limit";
import { rateLimited } from "../rate-budget";
import { readJson } from "../validation";
import { requireSameOrigin } from "../auth/origin";
import { requireSession } from "../auth/session";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";

const RoutineBody = RoutineChange.refine(
  (body) => body.on !== undefined || body.time !== undefined || body.days !== undefined,
  "Give on, time or days.",
);

export const routines = new Hono<AppEnv>()
  .use(requireSession("reject"))
  .get("/", async (c) => {
    const now = new Date();
    const views = await c.var.db.withUser(c.var.person.id, async (tx) => {
      const zone = zoneOrUtc((await profileOf(tx))?.timezone);
      return { brief: await routineView(tx, "brief", zone, now), review: await routineView(tx, "review", zone, now) };
    });
    return c.json(views);
  })
  .put("/:name{brief|review}", requireSameOrigin, limitBody(1024), rateLimited("edit"), async (c) => {
    const name = c.req.param("name") as RoutineName;
    const body = await readJson(c, RoutineBody);
    const userId = c.var.person.id;
    const changed = await changeRoutine(c.var.db, userId, name, body, new Date());
    if ("problem" in changed) throw new ApiError("bad_request", `That cannot be kept: ${changed.problem}.`);
    if (changed.planned) {
      await handOver(c.var.config, routineEvent(name, changed.planned), { requestId: c.var.requestId, userId }, runInAgent(c.env, userId));
    }
    return c.json({ routine: changed.view });
  });
