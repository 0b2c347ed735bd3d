// The offline model's fact extraction: a few first-person sentence shapes that state something
// lasting about the person, and since when where a sentence says so with a year ("since 2019", "in
// March 2021" is not read). Deterministic and network-free, like the rest of the offline model.
import type { ExtractedFact } from "../../fact-extraction";

type Rule = [RegExp, (m: RegExpExecArray) => Omit<ExtractedFact, "confidence" | "since"> | null];

/** "since 2019", "in 2019", "since 2019-03": the year (or month) a claim holds from. */
const SINCE = /\s*,?\s*\b(?:since|in)\s+(\d{4}(?:-\d{2})?)\b/i;

const clean = (value: string | undefined) =>
  (value ?? "")
    .trim()
    .replace(/[.!?,;]+$/, "")
    .trim();

/** Relations a person has one of: a new name replaces the old ("my partner is Sam" after "… is Alex"). */
const ONE_OF = "wife|husband|partner|girlfriend|boyfriend|mother|mom|mum|father|dad|boss|manager|best friend";
/** Relations a person may have several of: each name is a fact of its own. */
const MANY_OF = "sister|brother|son|daughter|friend|cousin|aunt|uncle|colleague|dog|cat";
export const RELATIONS = `${ONE_OF}|${MANY_OF}`;
/** A name as written with capitals ("Ana Souza"); after "name is", any case ("ana"), capitalised when kept. */
const NAME = "(\\p{Lu}[\\p{L}'-]+(?: \\p{Lu}[\\p{L}'-]+)?)";
const ANY_NAME = "(\\p{L}[\\p{L}'-]*(?: \\p{Lu}[\\p{L}'-]+)?)";

/** "Sister is Ana", subject "sister: ana" (or "partner" for a relation a person has one of). */
function relation(kind: string, name: string): Omit<ExtractedFact, "confidence" | "since"> {
  const rel = clean(kind).toLowerCase();
  const who = cap(clean(name));
  const single = new RegExp(`^(?:${ONE_OF})$`).test(rel);
  return { statement: `${cap(rel)} is ${who}`, category: "relationship", subject: single ? rel : `${rel}: ${who.toLowerCase()}` };
}

/** "it", "that": a like of something said elsewhere in the message, which the rules cannot name. */
const PRONOUN = /^(?:it|that|this|them|him|her|those|these)\b/i;

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
    /\bi(?:'m| am) (?:not|no longer) (?:an? )?(vegetarian|vegan|pescatarian)\b/i,
    (m) => ({ statement: `Is not ${clean(m[1]).toLowerCase()}`, category: "preference", subject: "diet" }),
  ],
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
  [new RegExp(`\\b[Mm]y (${RELATIONS})'s name is ${ANY_NAME}`, "u"), (m) => relation(m[1] ?? "", m[2] ?? "")],
  [new RegExp(`\\b[Mm]y (${RELATIONS}) is ${NAME}`, "u"), (m) => relation(m[1] ?? "", m[2] ?? "")],
  [new RegExp(`\\b${NAME} is my (${RELATIONS})\\b`, "u"), (m) => relation(m[2] ?? "", m[1] ?? "")],
  [
    new RegExp(`\\b[Mm]y name is ${ANY_NAME}`, "u"),
    (m) => ({ statement: `Name is ${cap(clean(m[1]))}`, category: "personal", subject: "name" }),
  ],
  [
    /\bmy birthday is (?:on )?([^.,;!?]+)/i,
    (m) => ({ statement: `Birthday is ${clean(m[1])}`, category: "personal", subject: "birthday" }),
  ],
  [/\bi was born on ([^.,;!?]+)/i, (m) => ({ statement: `Birthday is ${clean(m[1])}`, category: "personal", subject: "birthday" })],
  [/\bi(?:'m| am) from ([^.,;!?]+)/i, (m) => ({ statement: `Is from ${clean(m[1])}`, category: "personal", subject: "origin" })],
  [/\bi speak ([^.,;!?]+)/i, (m) => ({ statement: `Speaks ${clean(m[1])}`, category: "personal", subject: "languages" })],
  [
    /\bi(?:'m| am) learning ([^.,;!?]+)/i,
    (m) => ({ statement: `Is learning ${clean(m[1])}`, category: "goal", subject: `learning: ${clean(m[1]).toLowerCase()}` }),
  ],
  [
    /\bi (?:really )?(?:love|like|enjoy) ([^.,;!?]+)/i,
    (m) =>
      PRONOUN.test(clean(m[1]))
        ? null
        : { statement: `Likes ${clean(m[1])}`, category: "preference", subject: `likes: ${clean(m[1]).toLowerCase()}` },
  ],
  [
    /\bi (?:really )?(?:hate|dislike|can't stand) ([^.,;!?]+)/i,
    (m) =>
      PRONOUN.test(clean(m[1]))
        ? null
        : { statement: `Dislikes ${clean(m[1])}`, category: "preference", subject: `likes: ${clean(m[1]).toLowerCase()}` },
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
      if (!fact) continue;
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
