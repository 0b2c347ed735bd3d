// The offline model on the person themselves: their standing facts as the turn's prompt lists them
// (agents/turn/profile.ts: "<person-facts>" lines, the same the real model reads), the questions about
// them it understands ("what do you know about me?", "where do I live?", "who is my sister?"), and a
// fact said back in the second person ("Lives in Porto" → "you live in Porto").
import { RELATIONS } from "./offline-facts";

/** The statements of the person's current facts in the turn's system prompt, most certain first. */
export function profileStatements(system: string): string[] {
  const fenced = /<person-facts>\n([\s\S]*?)\n<\/person-facts>/.exec(system)?.[1] ?? "";
  return fenced
    .split("\n")
    .map((line) => /^- (.+) \([a-z]+(?:, since [^,]+)?, confidence [\d.]+\)$/.exec(line)?.[1])
    .filter((statement): statement is string => Boolean(statement));
}

const SECOND_PERSON: Array<[RegExp, string]> = [
  [/^Lives in /, "you live in "],
  [/^Works at /, "you work at "],
  [/^Works as /, "you work as "],
  [/^Speaks /, "you speak "],
  [/^Likes /, "you like "],
  [/^Dislikes /, "you dislike "],
  [/^Is not /, "you're not "],
  [/^Is /, "you're "],
  [/^Name is /, "your name is "],
  [/^Birthday is /, "your birthday is "],
  [/^Favorite /, "your favorite "],
  [new RegExp(`^(${RELATIONS}) is `, "i"), "your $1 is "],
];

/** A fact's statement said to the person: "Sister is Ana" → "your sister is Ana"; others as stored. */
export function toYou(statement: string): string {
  for (const [pattern, replacement] of SECOND_PERSON) {
    if (pattern.test(statement)) return statement.replace(pattern, (...m) => replacement.replace("$1", String(m[1]).toLowerCase()));
  }
  return statement;
}

/** "a, b and c". */
export function listed(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? "") : `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`;
}

export type PersonQuestion = { kind: "me" } | { kind: "ask"; topic: string; statement: RegExp };

/** Questions about one thing: what they are about (said when nothing answers them) and the statements that do. */
const QUESTIONS: Array<[RegExp, (m: RegExpExecArray) => { topic: string; statement: RegExp }]> = [
  [/^where (?:do i live|am i living|is my home|'s my home)\b/, () => ({ topic: "where you live", statement: /^Lives in / })],
  [
    /^(?:where do i work|who do i work for|what(?: is|'s) my job|what do i do for (?:a )?(?:living|work))\b/,
    () => ({ topic: "what you do", statement: /^Works / }),
  ],
  [
    /^(?:what do i eat|what(?: is|'s) my diet|am i (?:a )?(?:vegetarian|vegan|pescatarian))\b/,
    () => ({ topic: "what you eat", statement: /^Is (?:not )?(?:vegetarian|vegan|pescatarian)/ }),
  ],
  [/^when(?: is|'s) my birthday\b/, () => ({ topic: "your birthday", statement: /^Birthday is / })],
  [/^(?:what|which) languages? do i speak\b/, () => ({ topic: "which languages you speak", statement: /^Speaks / })],
  [/^(?:what(?: is|'s) my name|who am i)\b/, () => ({ topic: "your name", statement: /^Name is / })],
  [/^where am i from\b/, () => ({ topic: "where you're from", statement: /^Is from / })],
  [/^what do i (?:like|love|enjoy)\b/, () => ({ topic: "what you like", statement: /^Likes / })],
  [/^(?:what am i allergic to|am i allergic)\b/, () => ({ topic: "your allergies", statement: /^Is allergic to / })],
  [/^what am i learning\b/, () => ({ topic: "what you're learning", statement: /^Is learning / })],
  [
    /^what(?: is|'s) my favou?rite ([a-z]+)\b/,
    (m) => ({ topic: `your favorite ${m[1]}`, statement: new RegExp(`^Favorite ${m[1]} is `, "i") }),
  ],
  [
    new RegExp(`^(?:who|what)(?: is|'s| are) my (${RELATIONS})(?:'s name|s|s' names)?\\b`),
    (m) => ({ topic: `your ${m[1]}'s name`, statement: new RegExp(`^${m[1]} is `, "i") }),
  ],
];

/** The question about the person in `clean` (one line, as said), if it is one the offline model knows. */
export function personQuestion(clean: string): PersonQuestion | null {
  const said = clean.toLowerCase().replace(/[?!.]+$/, "");
  if (/^(?:what do you (?:know|remember) about me|what have i told you(?: about me)?|tell me about (?:me|myself))$/.test(said))
    return { kind: "me" };
  for (const [question, answer] of QUESTIONS) {
    const match = question.exec(said);
    if (match) return { kind: "ask", ...answer(match) };
  }
  return null;
}

/** The answer to a question about the person, from the facts the prompt lists. */
export function answerAboutPerson(question: PersonQuestion, statements: string[]): string {
  if (question.kind === "me") {
    if (statements.length === 0)
      return 'I don\'t know anything about you yet. Tell me something, like "I live in Lisbon" or "I\'m vegetarian".';
    return `Here's what I know about you: ${listed(statements.map(toYou))}.`;
  }
  const found = statements.filter((s) => question.statement.test(s));
  if (found.length === 0) return `You haven't told me ${question.topic} yet.`;
  const said = listed(found.map(toYou));
  return `${said.charAt(0).toUpperCase()}${said.slice(1)}.`;
}
