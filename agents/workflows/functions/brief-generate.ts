// brief-generate: the day's brief for one person — what is coming up in the next 24 hours, what they
// talked about yesterday, how much mail arrived — sent on the channels the person chose for it
// (Telegram, a push to their devices, or both: agents/integrations/notices.ts). Nothing to say → nothing sent.
// Delivered once per person and date (a claimed `sources` row), however often it is requested.
// The brief's words stay in Postgres: "compose" writes them into the claim, "send" reads them back under
// the person's own transaction, and what Inngest keeps of either step is whether it happened. A person
// deleted in between has no claim left, and nothing is sent.
// A request with `at` is an occurrence of the person's own brief routine (agents/schedules/routines.ts):
// it sleeps until then, and, if it still stands (not moved or turned off since), plans and hands over the
// next occurrence before composing anything, so a brief that fails for good does not end the chain.
import { briefContents, claimDelivery, claimedDelivery, contactOf, type BriefContents } from "../../../db/repositories/digest";
import { formatLocalTime } from "../../../platform/local-time";
import { chosenChannels, deliverNotice } from "../../integrations/notices";
import { planAfter, routineEvent } from "../../schedules/routines";
import type { InngestClient } from "../client";
import type { WorkflowDeps } from "../deps";
import { briefRequested, type BriefRequested } from "../events";
import { inngestSteps, type Steps } from "../steps";

/** A brief is stale by the evening: a push service drops it for a device offline longer. */
const BRIEF_TTL_SECONDS = 12 * 3600;

export function briefGenerate(inngest: InngestClient, deps: WorkflowDeps) {
  return inngest.createFunction(
    {
      id: "brief-generate",
      name: "Compose and send the morning brief",
      triggers: [briefRequested],
      concurrency: { key: "event.data.userId", limit: 1 },
      retries: 3,
    },
    // event.data validated against briefRequested by the SDK (EventValidationError, not retried)
    async ({ event, step }) => sendBrief(deps, event.data, inngestSteps(step)),
  );
}

/** One person's brief for one date, on Inngest's steps or the agent's own (agents/local-runs.ts). */
export async function sendBrief(deps: WorkflowDeps, request: BriefRequested, step: Steps) {
  if (request.at) {
    const at = new Date(request.at);
    await step.sleepUntil("wait-until-due", at);
    const next = await step.run("plan-next", () => planAfter(deps.db, request.userId, "brief", at));
    if (!next) return { sent: false, reason: "moved, turned off or set back to 08:00 since it was planned" };
    await step.sendEvent("hand-over-next", routineEvent("brief", next));
  }
  const composed = await step.run("compose", async () => {
    return deps.db.withUser(request.userId, async (tx) => {
      const contact = await contactOf(tx);
      // Nobody to send it to (no Telegram chat, no device with notifications on): nothing is composed.
      const { channels } = await chosenChannels(tx, deps, "brief");
      if (!contact || (!channels.telegram && !channels.push)) return null;
      const text = composeBrief(await briefContents(tx, deps.now()), contact);
      if (!text) return null;
      // Claimed in the same transaction as it is composed: a second request for this date finds it taken.
      return (await claimDelivery(tx, request.userId, "brief", request.date, text)) ? { claimed: true } : null;
    });
  });
  if (!composed) return { sent: false };
  const sent = await step.run("send", async () => {
    const text = await deps.db.withUser(request.userId, (tx) => claimedDelivery(tx, "brief", request.date));
    if (text === null) return false;
    const took = await deliverNotice(deps, request.userId, "brief", {
      text,
      title: "Your morning brief",
      url: "/app/reminders",
      options: { ttlSeconds: BRIEF_TTL_SECONDS, urgency: "normal", topic: "brief" },
    });
    return took.telegram || took.push;
  });
  return { sent };
}

/** The brief's text, or null when there is nothing worth a message. */
function composeBrief(contents: BriefContents, person: { displayName: string; timezone: string }): string | null {
  if (contents.upcoming.length === 0 && contents.recent.length === 0 && contents.mail === 0) return null;
  const lines = [`Good morning${person.displayName ? `, ${person.displayName.split(" ")[0]}` : ""}! Here's your day.`];
  if (contents.upcoming.length > 0) {
    lines.push("", "Coming up:");
    for (const item of contents.upcoming) lines.push(`• ${formatLocalTime(new Date(item.at), person.timezone)} ${item.text}`);
  }
  if (contents.recent.length > 0) {
    lines.push("", `On your mind yesterday: ${contents.recent.map((e) => `${e.name} (${e.type})`).join(", ")}.`);
  }
  if (contents.mail > 0) lines.push("", `${contents.mail} new email${contents.mail === 1 ? "" : "s"} since yesterday.`);
  return lines.join("\n");
}
