// The person's standing facts in every turn's prompt: their current facts (never superseded ones),
// most confident and then most recently confirmed first, cut to a budget (≈ 400 tokens). Facts are
// memory content — extracted from the person's own words, but read by the model as data — so the
// profile is fenced like recalled email text is (agents/turn/tools/untrusted-memory.ts), and the fence cannot be
// closed from inside a statement.
import type { Database } from "../../db/database";
import { currentFacts } from "../../db/repositories/facts";
import { localDate } from "../../platform/local-time";
import { neutralise } from "./tools/untrusted-memory";

export const PROFILE_OPEN = "<person-facts>";
export const PROFILE_CLOSE = "</person-facts>";
/** The profile's budget in characters (≈ 400 tokens). */
export const PROFILE_MAX_CHARS = 1600;
/** Facts read per turn: more than ever fit the budget. */
const PROFILE_CANDIDATES = 80;

type ProfileFact = { statement: string; category: string; confidence: number; happenedAt?: Date | null };

/**
 * The fenced profile for `facts` (in the order given), within PROFILE_MAX_CHARS; null when there are
 * none. Since when a fact holds, where known, is a date on the person's clock (`zone`).
 */
function profileText(facts: ProfileFact[], zone = "UTC"): string | null {
  const lines: string[] = [];
  let used = PROFILE_OPEN.length + PROFILE_CLOSE.length + 2;
  for (const fact of facts) {
    // No tag survives inside the fence, nested or not (`</person-</person-facts>facts>`): see neutralise.
    const statement = neutralise(fact.statement).replace(/\s+/g, " ").trim();
    if (!statement) continue;
    const since = fact.happenedAt ? `, since ${localDate(fact.happenedAt, zone)}` : "";
    const line = `- ${statement} (${fact.category}${since}, confidence ${fact.confidence.toFixed(1)})`;
    if (used + line.length + 1 > PROFILE_MAX_CHARS) break;
    lines.push(line);
    used += line.length + 1;
  }
  return lines.length ? [PROFILE_OPEN, ...lines, PROFILE_CLOSE].join("\n") : null;
}

/** The person's profile as the prompt carries it (null when nothing is known yet). */
export async function loadProfile(db: Database, userId: string, zone: string): Promise<string | null> {
  return profileText(await db.withUser(userId, (tx) => currentFacts(tx, PROFILE_CANDIDATES)), zone);
}
