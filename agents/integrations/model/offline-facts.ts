// The offline model's fact extraction: a few first-person sentence shapes that state something
// lasting about the person, and since when where a sentence says so with a year ("since 2019", "in
// March 2021" is not read). Deterministic and network-free, like the rest of the offline model.
import type { ExtractedFact } from "../../fact-extraction";

type Rule = [RegExp, (m: RegExpExecArray) => Omit<ExtractedFact, "confidence" | "since">];

/** "since 2019", "in 2019", "since 2019-03": the year (or month) a claim holds from. */
const SINCE = /\s*,?\s*\b(?:since|in)\s+(\d{4}(?:-\d{2})?)\b/i;

const clean = (value: string | undefined) =>
  (value ?? "")
    .trim()
    .replace(/[.!?,;]+$/, "")
    .trim();

const RELATIONS =
  "wife|husband|partner|girlfriend|boyfriend|sister|brother|mother|mom|mum|father|dad|son|daughter|best friend|boss|manager|dog|cat";

const RULES: Rule[] = [
  [
    /\bi(?:'ve| have) lived in ([^.,;!?]+?)(?: for [^.,;!?]+)?(?=[.,;!?]|$)/i,
    (m) => ({ statement: `Lives in ${clean(m[1])}`, category: "location", subject: "home city" }),
  ],
  [/\bi(?: now)? live in ([^.,;!?]+)/i, (m) => ({ statement: `Lives in ${clean(m[1])}`, category: "location", subject: "home city" })],
  [/\bi(?: just)? moved to ([^.,;!?]+)/i, (m) => ({ statement: `Lives in ${clean(m[1])}`, category: "location", subject: "home city" })],
  [/\bi work (?:at|for) ([^.,;!?]+)/i, (m) => ({ statement: `Works at ${clean(m[1])}`, category: "work", subject: "employer" })],
  [/\bi work as an? ([^.,;!?]+)/i, (m) => ({ statement: `Works as a ${clean(m[1])}`, category: "work", subject: "job" })],
  [
    /\bi(?:'m| am) (?:an? )?(vegetarian|vegan|pescatarian)\b/i,
    (m) => ({ statement: `Is ${clean(m[1]).toLowerCase()}`, category: "preference", subject: "diet" }),
  ],
  [
    /\bi(?:'m| am) allergic to ([^.,;!?]+)/i,
    (m) => ({ statement: `Is allergic to ${clean(m[1])}`, category: "health", subject: `allergy: ${clean(m[1]).toLowerCase()}` }),
  ],
  [
    /\bmy favou?rite ([a-z ]+?) is ([^.,;!?]+)/i,
    (m) => ({
      statement: `Favorite ${clean(m[1]).toLowerCase()} is ${clean(m[2])}`,
      category: "preference",
      subject: `favorite ${clean(m[1]).toLowerCase()}`,
    }),
  ],
  [
    new RegExp(`\\bmy (${RELATIONS})(?:'s name)? is ([A-Z][\\p{L}'-]+(?: [A-Z][\\p{L}'-]+)?)`, "iu"),
    (m) => ({
      statement: `${cap(clean(m[1]).toLowerCase())} is ${clean(m[2])}`,
      category: "relationship",
      subject: clean(m[1]).toLowerCase(),
    }),
  ],
  [
    /\bmy birthday is (?:on )?([^.,;!?]+)/i,
    (m) => ({ statement: `Birthday is ${clean(m[1])}`, category: "personal", subject: "birthday" }),
  ],
  [
    /\bi(?:'m| am) learning ([^.,;!?]+)/i,
    (m) => ({ statement: `Is learning ${clean(m[1])}`, category: "goal", subject: `learning: ${clean(m[1]).toLowerCase()}` }),
  ],
  [
    /\bi (?:really )?(?:love|like|enjoy) ([^.,;!?]+)/i,
    (m) => ({ statement: `Likes ${clean(m[1])}`, category: "preference", subject: `likes: ${clean(m[1]).toLowerCase()}` }),
  ],
  [
    /\bi (?:really )?(?:hate|dislike|can't stand) ([^.,;!?]+)/i,
    (m) => ({ statement: `Dislikes ${clean(m[1])}`, category: "preference", subject: `likes: ${clean(m[1]).toLowerCase()}` }),
  ],
];

/** The durable facts the offline model recognises in `text`. Hedged statements get lower confidence. */
export function offlineFacts(text: string): ExtractedFact[] {
  if (/\?\s*$/.test(text.trim())) return [];
  const hedged = /\b(maybe|might|probably|i think|not sure)\b/i.test(text);
  const facts: ExtractedFact[] = [];
  for (const said of text.split(/(?<=[.!?;])\s+|\n+/)) {
    const since = SINCE.exec(said);
    const sentence = since ? said.replace(SINCE, "") : said;
    for (const [pattern, build] of RULES) {
      const match = pattern.exec(sentence);
      if (!match) continue;
      const fact = build(match);
      if (fact.statement.length > 3 && !facts.some((f) => f.subject === fact.subject)) {
        facts.push({ ...fact, confidence: hedged ? 0.5 : 0.9, ...(since ? { since: since[1] } : {}) });
      }
      break;
    }
  }
  return facts;
}

function cap(value: string): string {
  return value.charAt(0).toUpperCase() + value.slice(1);
}
