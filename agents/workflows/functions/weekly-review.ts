// weekly-review: on Sunday evening where each person is (18:xx local), a summary of what they added to
// their memory that week, sent on the channels they chose for it (Telegram, push, or both). The cron runs hourly through every UTC hour in which it is
// Sunday 18:xx somewhere (UTC+14 to UTC−12: Sunday and Monday in UTC) and reviews the people whose
// clock shows it. Empty weeks send nothing; each person gets one review per ISO week of their local
// date (a claimed sources row), so a retried or overlapping run sends nothing twice.
// Each review is composed and sent inside its step: what Inngest keeps is counts, never its words. One
// person whose review fails (a blocked bot, their own data) is logged and counted, and the others go on
// (deps.ts, forOnePerson); only an outage fails the step, for Inngest to retry.
// A person who moved their review or turned it off is not in the hourly run: their review comes as
// review/requested at the time they set (agents/schedules/routines.ts), which sleeps until then, plans
// and hands over the next occurrence if this one still stands, and reviews that one person.
import { claimDelivery, peopleAtLocalHour, weekContents, type WeekContents } from "../../../db/repositories/digest";
import { chosenChannels, deliverNotice } from "../../integrations/notices";
import type { InngestClient } from "../client";
import { chunks, forOnePerson, type WorkflowDeps } from "../deps";
import { reviewRequested, type ReviewRequested } from "../events";
import { inngestSteps, type Steps } from "../steps";
import { planAfter, ROUTINE_DEFAULTS, routineEvent, WEEKDAYS } from "../../schedules/routines";

const WEEK_MS = 7 * 86_400_000;
/** A review is stale after a day: a push service drops it for a device offline longer. */
const REVIEW_TTL_SECONDS = 86_400;
/** By default Sunday (ISO weekday 7), 18:xx on the person's clock. */
const REVIEW_WEEKDAY = WEEKDAYS.indexOf(ROUTINE_DEFAULTS.review.days[0]!) + 1;
const REVIEW_HOUR = Number(ROUTINE_DEFAULTS.review.time.slice(0, 2));
/** People per step: a step stays well inside a request's time, the run inside Inngest's step limit. */
export const REVIEWS_PER_STEP = 25;

export function weeklyReview(inngest: InngestClient, deps: WorkflowDeps) {
  return inngest.createFunction(
    { id: "weekly-review", name: "Weekly review", triggers: [{ cron: "TZ=UTC 0 * * * 0,1" }, reviewRequested], retries: 3 },
    async ({ event, step }) => {
      if (event.name === reviewRequested.name) return reviewOccurrence(deps, event.data, inngestSteps(step));
      const people = await step.run("people", () =>
        deps.db.withSystem((tx) => peopleAtLocalHour(tx, "review", REVIEW_HOUR, deps.now(), REVIEW_WEEKDAY)),
      );
      let sent = 0;
      let failed = 0;
      for (const [i, batch] of chunks(people, REVIEWS_PER_STEP).entries()) {
        const done = await step.run(`review-${i}`, async () => {
          const outcome = { sent: 0, failed: 0 };
          for (const { userId, localDate } of batch) {
            const review = await forOnePerson(deps, "weekly-review", userId, () => reviewOne(deps, userId, localDate));
            if (!review.ok) outcome.failed++;
            else if (review.value) outcome.sent++;
          }
          return outcome;
        });
        sent += done.sent;
        failed += done.failed;
      }
      return { people: people.length, sent, ...(failed ? { failed } : {}) };
    },
  );
}

/** An occurrence of a review the person moved, on Inngest's steps or the agent's own (agents/local-runs.ts). */
export async function reviewOccurrence(deps: WorkflowDeps, request: ReviewRequested, step: Steps) {
  const at = new Date(request.at);
  await step.sleepUntil("wait-until-due", at);
  const next = await step.run("plan-next", () => planAfter(deps.db, request.userId, "review", at));
  if (!next) return { sent: false, reason: "moved, turned off or set back to Sunday 18:00 since it was planned" };
  await step.sendEvent("hand-over-next", routineEvent("review", next));
  return { sent: await step.run("review", () => reviewOne(deps, request.userId, request.date)) };
}

/** Composes, claims and sends one person's review; false when there was nothing to send (or it was sent before). */
async function reviewOne(deps: WorkflowDeps, userId: string, localDate: string): Promise<boolean> {
  const now = deps.now();
  // The week of the person's own Sunday (noon UTC of that date lies in it whatever the zone).
  const week = isoWeek(new Date(`${localDate}T12:00:00Z`));
  const review = await deps.db.withUser(userId, async (tx) => {
    const { channels } = await chosenChannels(tx, deps, "review");
    if (!channels.telegram && !channels.push) return null;
    const text = composeReview(await weekContents(tx, new Date(now.getTime() - WEEK_MS)));
    if (!text) return null;
    return (await claimDelivery(tx, userId, "weekly-review", week, text)) ? { text } : null;
  });
  if (!review) return false;
  const took = await deliverNotice(deps, userId, "review", {
    text: review.text,
    title: "Your week in memory",
    url: "/app/memories",
    options: { ttlSeconds: REVIEW_TTL_SECONDS, urgency: "low", topic: "review" },
  });
  return took.telegram || took.push;
}

/** The review's text, or null for a week with nothing new. */
function composeReview(week: WeekContents): string | null {
  if (week.byType.length === 0 && week.facts.length === 0) return null;
  const lines = ["Your week in memory:"];
  for (const { type, names } of week.byType) lines.push(`• ${type}: ${names.join(", ")}`);
  if (week.facts.length > 0) lines.push("", `Things I learned about you: ${week.facts.join("; ")}.`);
  if (week.mail > 0) lines.push("", `${week.mail} email${week.mail === 1 ? "" : "s"} came in.`);
  lines.push("", "Say /memories to see everything, or /forget to drop something.");
  return lines.join("\n");
}

/** "2026-W47": the ISO week of `date` (UTC). */
export function isoWeek(date: Date): string {
  const d = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate()));
  const day = d.getUTCDay() || 7;
  d.setUTCDate(d.getUTCDate() + 4 - day);
  const yearStart = Date.UTC(d.getUTCFullYear(), 0, 1);
  const week = Math.ceil(((d.getTime() - yearStart) / 86_400_000 + 1) / 7);
  return `${d.getUTCFullYear()}-W${String(week).padStart(2, "0")}`;
}
