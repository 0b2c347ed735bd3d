// The web app's reminders (session required):
//   GET    /api/reminders       {upcoming, past}: upcoming soonest first, past (sent, cancelled, …)
//                               newest first; each {id, text, at (UTC ISO), status, createdAt}
//   DELETE /api/reminders/:id   cancels it: 200 {cancelled: true, reminder} (again: the same answer);
//                               404 for an id that is not the person's (RLS hides the rest), 409 when
//                               it is being sent or was sent, 400 for an id that is not a UUID
import { Hono } from "hono";
import { z } from "zod";
import { cancelReminder, pastReminders, upcomingReminders } from "../../db/repositories/reminders";
import { requireSameOrigin } from "../auth/origin";
import { requireSession } from "../auth/session";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";

export const reminders = new Hono<AppEnv>()
  .use(requireSession("reject"))
  .get("/", async (c) => {
    const { upcoming, past } = await c.var.db.withUser(c.var.person.id, async (tx) => ({
      upcoming: await upcomingReminders(tx),
      past: await pastReminders(tx),
    }));
    return c.json({ upcoming, past });
  })
  .delete("/:id", requireSameOrigin, async (c) => {
    const id = z.uuid().safeParse(c.req.param("id"));
    if (!id.success) throw new ApiError("bad_request", "Reminder ids are UUIDs.");
    const result = await c.var.db.withUser(c.var.person.id, (tx) => cancelReminder(tx, id.data));
    if (result.outcome === "unknown") throw new ApiError("not_found", "No such reminder.");
    if (result.outcome === "too-late") {
      throw new ApiError(
        "conflict",
        result.reminder.status === "delivering"
          ? "This reminder is being sent right now."
          : "This reminder is past; it can no longer be cancelled.",
      );
    }
    return c.json({ cancelled: true, reminder: result.reminder });
  });
