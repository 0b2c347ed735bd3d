// The offline model (its phrasings, row by row: docs/offline-model.md): a small, deterministic model built into Soma, for running with no
// account and no network (npm start) and for tests. It is not an LLM: it understands a handful of
// sentence shapes — "I read / finished / watched / visited / met X", "remember that …", "which books
// did I read?", "what do you remember about X", "forget X", facts about the person ("I live in Lisbon"),
// questions about them answered from the facts in its prompt, and reminders with the common time
// expressions (offline-time.ts) — and answers through the same tool loop and tools as a real model (it
// emits tool calls, reads their results, then writes the reply). Asked for fact extraction (structured
// output, agents/fact-extraction.ts) it answers with agents/integrations/model/offline-facts.ts.
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4GenerateResult,
  LanguageModelV4Message,
  LanguageModelV4StreamPart,
} from "@ai-sdk/provider";
import { FACT_EXTRACTION_MARKER } from "../../fact-extraction";
import { offlineFacts } from "./offline-facts";
import { answerAboutPerson, listed, personQuestion, profileStatements, toYou, type PersonQuestion } from "./offline-person";
import { parseReminder, type ReminderRequest } from "./offline-time";
import { parseRoutine, routineAnswer, routinesSaid, type RoutineRequest } from "./offline-routines";

type Intent =
  | { kind: "capture"; type: string; name: string; properties: Record<string, string> }
  | { kind: "list"; type: string; label: string }
  | { kind: "about"; query: string }
  | { kind: "forget"; name: string }
  | { kind: "forwarded"; from: string }
  | { kind: "fact"; statements: string[] }
  | { kind: "remind"; request: ReminderRequest }
  | { kind: "reminders" }
  | { kind: "routine"; request: RoutineRequest }
  | { kind: "person"; question: PersonQuestion }
  | { kind: "greeting" }
  | { kind: "thanks" }
  | { kind: "help" }
  | { kind: "chat" };

interface ToolOutcome {
  toolName: string;
  input: Record<string, unknown>;
  output: unknown;
}

const VERBS: Array<[RegExp, string]> = [
  [/\b(?:just\s+|have\s+|recently\s+)?(?:finished reading|started reading|am reading|'m reading|finished|read|reading)\s+(.+)/i, "book"],
  [/\b(?:just\s+|have\s+|recently\s+)?(?:watched|saw|rewatched)\s+(.+)/i, "movie"],
  [/\b(?:just\s+|have\s+|recently\s+)?(?:visited|went to|been to|travelled to|traveled to)\s+(.+)/i, "place"],
  [/\b(?:just\s+|recently\s+)?met\s+(.+)/i, "person"],
];

const PLURALS: Record<string, string> = {
  books: "book",
  book: "book",
  movies: "movie",
  movie: "movie",
  films: "movie",
  film: "movie",
  places: "place",
  place: "place",
  cities: "place",
  countries: "place",
  people: "person",
  persons: "person",
  person: "person",
  notes: "note",
  note: "note",
  projects: "project",
  project: "project",
};

/** What the last user message asks for, said at `now` by a person whose clock is in `zone`. */
function parseIntent(text: string, now = new Date(), zone = "UTC"): Intent {
  // Someone else's words (agents/telegram-input.ts marks a forward so): nothing in them is the person's.
  const forwarded = /^Forwarded from ([^\n]+):\n/.exec(text.trim());
  if (forwarded?.[1]) return { kind: "forwarded", from: forwarded[1] };
  const clean = text.trim().replace(/\s+/g, " ");
  if (/^(?:hi|hello|hey|hallo|good (?:morning|afternoon|evening)|hiya|yo)(?: there)?(?: soma)?[!.,]*$/i.test(clean))
    return { kind: "greeting" };
  if (/^(?:thanks|thank you|thx|cheers|great|perfect|ok(?:ay)?|nice)(?: (?:so much|a lot|soma))?[!.,]*$/i.test(clean))
    return { kind: "thanks" };
  if (/^(?:\/?help|what can you do|what do you do|how do(?:es)? (?:this|you|it) work|who are you)\??[!.]*$/i.test(clean))
    return { kind: "help" };
  const forget = /^\/?(?:please\s+)?forget(?:\s+about)?\s+(.+?)[.!]?$/i.exec(clean);
  if (forget?.[1]) return { kind: "forget", name: stripQuotes(forget[1]) };

  const reminder = parseReminder(clean, now, zone);
  if (reminder) return { kind: "remind", request: reminder };
  if (/^(?:\/reminders|(?:what|which|show|list|any|do i have)\b.*\breminders\b)/i.test(clean)) return { kind: "reminders" };
  const routine = parseRoutine(clean);
  if (routine) return { kind: "routine", request: routine };
  const question = personQuestion(clean);
  if (question) return { kind: "person", question };

  const note = /\bremember (?:that )?(.+?)[.!]?$/i.exec(clean);
  if (note?.[1] && !/\?$/.test(clean) && !/\bdo you remember\b/i.test(clean)) {
    return { kind: "capture", type: "note", name: note[1], properties: {} };
  }

  const facts = offlineFacts(clean);
  if (facts.length > 0) return { kind: "fact", statements: facts.map((f) => f.statement) };

  if (/\?$/.test(clean) || /^(which|what|who|where|do you|did i|have i|list)\b/i.test(clean)) {
    const who = /^who(?: is|'s) (.+?)\??$/i.exec(clean);
    if (who?.[1]) return { kind: "about", query: stripQuotes(who[1]) };
    const typed = /\b(books?|movies?|films?|places?|cities|countries|people|persons?|notes?|projects?)\b/i.exec(clean);
    if (typed?.[1] && /\b(which|what|list|all|my)\b/i.test(clean)) {
      const word = typed[1].toLowerCase();
      return { kind: "list", type: PLURALS[word] ?? word, label: word.endsWith("s") || word === "people" ? word : `${word}s` };
    }
    const about = /\b(?:remember|know|about)\s+(?:anything\s+)?(?:about\s+)?(.+?)\??$/i.exec(clean);
    if (about?.[1]) return { kind: "about", query: stripQuotes(about[1]) };
    return { kind: "chat" };
  }

  if (/^i\b|^i'|^just\b|^today\b|^yesterday\b/i.test(clean)) {
    for (const [pattern, type] of VERBS) {
      const match = pattern.exec(clean);
      if (match?.[1]) {
        const { name, properties } = cleanTitle(match[1], type);
        if (name) return { kind: "capture", type, name, properties };
      }
    }
  }
  return { kind: "chat" };
}

export class OfflineModel implements LanguageModelV4 {
  readonly specificationVersion = "v4" as const;
  readonly provider = "soma";
  readonly modelId = "offline";
  readonly supportedUrls = {};

  async doGenerate(options: LanguageModelV4CallOptions): Promise<LanguageModelV4GenerateResult> {
    const available = new Set((options.tools ?? []).map((t) => t.name));
    const content = isFactExtraction(options)
      ? [
          text(
            JSON.stringify({
              facts: parseIntent(lastUserText(options.prompt)).kind === "forwarded" ? [] : offlineFacts(lastUserText(options.prompt)),
            }),
          ),
        ]
      : respond(options.prompt, available);
    const calls = content.some((c) => c.type === "tool-call");
    const words = content.reduce((n, c) => n + (c.type === "text" ? c.text.split(/\s+/).length : 8), 0);
    return {
      content,
      finishReason: { unified: calls ? "tool-calls" : "stop", raw: undefined },
      usage: {
        inputTokens: { total: promptSize(options.prompt), noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: words, text: words, reasoning: undefined },
      },
      warnings: [],
    };
  }

  async doStream(options: LanguageModelV4CallOptions) {
    const result = await this.doGenerate(options);
    const parts: LanguageModelV4StreamPart[] = [{ type: "stream-start", warnings: [] }];
    for (const [index, item] of result.content.entries()) {
      if (item.type === "text") {
        const id = `text-${index}`;
        parts.push({ type: "text-start", id });
        for (const piece of item.text.match(/\S+\s*/g) ?? []) parts.push({ type: "text-delta", id, delta: piece });
        parts.push({ type: "text-end", id });
      } else {
        parts.push(item as LanguageModelV4StreamPart);
      }
    }
    parts.push({ type: "finish", finishReason: result.finishReason, usage: result.usage });
    return {
      stream: new ReadableStream<LanguageModelV4StreamPart>({
        start(controller) {
          for (const part of parts) controller.enqueue(part);
          controller.close();
        },
      }),
    };
  }
}

/** A structured-output request for fact extraction (agents/fact-extraction.ts), answered by the sentence rules. */
function isFactExtraction(options: LanguageModelV4CallOptions): boolean {
  const system = options.prompt.find((m) => m.role === "system");
  return (
    options.responseFormat?.type === "json" && typeof system?.content === "string" && system.content.startsWith(FACT_EXTRACTION_MARKER)
  );
}

function lastUserText(prompt: LanguageModelV4Message[]): string {
  const last = prompt.findLast((m) => m.role === "user");
  return last ? textOf(last) : "";
}

/** The next step of the turn: a tool call, or the reply once the tools have answered. */
function respond(prompt: LanguageModelV4Message[], tools: Set<string>): LanguageModelV4Content[] {
  const lastUser = prompt.findLastIndex((m) => m.role === "user");
  const userText = lastUserText(prompt);
  const outcomes = toolOutcomes(prompt.slice(lastUser + 1));
  const system = prompt.find((m) => m.role === "system");
  const context = typeof system?.content === "string" ? system.content : "";
  // The person's clock, as the prompt names it: "(Europe/Lisbon; local time 2026-11-24T08:15)".
  const zone = /\(([^;()\s]+); local time \d{4}-/.exec(context)?.[1] ?? "UTC";
  const intent = parseIntent(userText, new Date(), zone);
  const step = outcomes.length;
  const call = (toolName: string, input: Record<string, unknown>): LanguageModelV4Content[] =>
    tools.has(toolName)
      ? [{ type: "tool-call", toolCallId: `offline-${lastUser}-${step}`, toolName, input: JSON.stringify(input) }]
      : [text("I can't reach my memory right now, so I can't do that.")];

  switch (intent.kind) {
    case "capture": {
      if (step === 0)
        return call("memory_capture", {
          type: intent.type,
          name: intent.name,
          ...(Object.keys(intent.properties).length ? { properties: intent.properties } : {}),
        });
      const result = outcomes[0]?.output as { created?: boolean; error?: string } | undefined;
      if (!result || result.error) return [text(`I couldn't save that just now${result?.error ? ` (${result.error})` : ""}.`)];
      return [
        text(
          result.created
            ? `Noted: ${intent.name} (${intent.type}). I'll remember it.`
            : `I already had ${intent.name} (${intent.type}); I've updated it.`,
        ),
      ];
    }
    case "list": {
      if (step === 0) return call("memory_recall", { query: intent.label, type: intent.type, limit: 50 });
      const names = recalledNames(outcomes[0]?.output);
      return [text(names.length ? `Your ${intent.label}: ${names.join(", ")}.` : `I don't have any ${intent.label} saved yet.`)];
    }
    case "about": {
      if (step === 0) return call("memory_recall", { query: intent.query, limit: 5 });
      const found = [
        ...recalled(outcomes[0]?.output).map((f) => `${f.name} (${f.type})`),
        ...recalledFacts(outcomes[0]?.output).map(toYou),
      ];
      return [text(found.length ? `Here's what I remember: ${found.join(", ")}.` : `I don't remember anything about ${intent.query}.`)];
    }
    case "fact":
      // Kept by fact extraction after the turn (fact-extract, or the agent itself without a workflow engine).
      return [text(`Got it: ${listed(intent.statements.map(toYou))}.`)];
    case "person":
      return [text(answerAboutPerson(intent.question, profileStatements(context)))];
    case "remind":
      return remind(intent.request, zone, step, outcomes[0]?.output, call);
    case "reminders": {
      if (step === 0) return call("schedule_list", {});
      const listing = outcomes[0]?.output as { reminders?: Array<{ text: string; when: string }>; timezone?: string } | undefined;
      const waiting = listing?.reminders ?? [];
      if (waiting.length === 0) return [text('You have no reminders waiting. Try "remind me to call Ana tomorrow at 9".')];
      return [text(`Your reminders (${listing?.timezone ?? zone} time): ${waiting.map((r) => `${r.text} — ${r.when}`).join("; ")}.`)];
    }
    case "routine": {
      const { request } = intent;
      if (request.ask === "when") return step === 0 ? call("schedule_list", {}) : [text(routinesSaid(outcomes[0]?.output))];
      if (step === 0) return call("routine_set", { routine: request.routine, ...request.change });
      return [text(routineAnswer(request.routine, outcomes[0]?.output, zone))];
    }
    case "forget": {
      if (step === 0) return call("memory_recall", { query: intent.name, limit: 1 });
      const target = recalled(outcomes[0]?.output)[0];
      if (!target) return [text(`I couldn't find anything called ${intent.name}.`)];
      if (step === 1) return call("memory_forget", { entityId: target.id });
      const archived = (outcomes[1]?.output as { archived?: boolean } | undefined)?.archived;
      return [text(archived ? `Done. I've forgotten ${target.name}.` : `I couldn't forget ${target.name} just now.`)];
    }
    case "forwarded":
      return [text(`That's from ${intent.from}, so I haven't saved it as yours. If it's true for you too, tell me in your own words.`)];
    case "greeting":
      return [text(`Hi! ${EXAMPLES}`)];
    case "thanks":
      return [text("You're welcome. Tell me whenever there's something worth remembering.")];
    case "help":
      return [
        text(
          `I remember what you tell me and find it again when you ask. ${EXAMPLES} ` +
            'You can also say "remember that …" for anything else, "what do you remember about Dune?", or "forget Dune".',
        ),
      ];
    case "chat":
      return [
        text(
          `I didn't understand that: I'm the small offline model built into Soma, not a full language model. ${EXAMPLES} ` +
            "For a real model, whoever runs this Soma starts a local one (Ollama, LM Studio) or sets AI_PROVIDER.",
        ),
      ];
  }
}

/** A reminder set with schedule_create, or what is missing to set one. */
function remind(
  request: ReminderRequest,
  zone: string,
  step: number,
  output: unknown,
  call: (toolName: string, input: Record<string, unknown>) => LanguageModelV4Content[],
): LanguageModelV4Content[] {
  const { what, when } = request;
  if (!when) return [text(`When should I remind you${what ? ` to ${what}` : ""}? Say it like "remind me to call Ana tomorrow at 9".`)];
  if (!what) return [text(`What should I remind you of ${when.words}? Say it like "remind me to call Ana tomorrow at 9".`)];
  if (step === 0) return call("schedule_create", { text: what, at: when.at, ...(request.repeat ? { repeat: request.repeat.rule } : {}) });
  const result = output as { eventId?: string; warning?: string; error?: string; repeats?: string; next?: string } | undefined;
  if (!result?.eventId) return [text(`I couldn't set that reminder${result?.error ? `: ${result.error}` : ""}.`)];
  const undelivered = result.warning ? " It's saved, but reminders can't be delivered right now." : "";
  if (request.repeat && result.repeats && result.next) {
    const next = localDay(result.next);
    return [text(`Repeating reminder set: ${what}, ${result.repeats} (next: ${next}, ${zone}).${undelivered}`)];
  }
  const detail = when.words.startsWith("in ")
    ? `at ${when.instant.toLocaleTimeString("en-GB", { timeZone: zone, hour: "2-digit", minute: "2-digit" })} ${zone}`
    : `${when.instant.toLocaleDateString("en-GB", { timeZone: zone, weekday: "long", day: "numeric", month: "long" })}, ${zone}`;
  return [text(`Reminder set: ${what}, ${when.words} (${detail}).${undelivered}`)];
}

/** "2026-11-30T09:00" (a local date and time) as "Monday 30 November". */
function localDay(local: string): string {
  return new Date(`${local.slice(0, 10)}T12:00:00Z`).toLocaleDateString("en-GB", {
    timeZone: "UTC",
    weekday: "long",
    day: "numeric",
    month: "long",
  });
}

/** Two things the offline model understands, said in every answer that explains it. */
const EXAMPLES = 'Try "I just finished reading Dune", then ask "which books did I read?".';

function text(value: string): LanguageModelV4Content {
  return { type: "text", text: value };
}

function textOf(message: LanguageModelV4Message): string {
  if (typeof message.content === "string") return message.content;
  return message.content.map((part) => (part.type === "text" ? part.text : "")).join(" ");
}

function toolOutcomes(messages: LanguageModelV4Message[]): ToolOutcome[] {
  const inputs = new Map<string, Record<string, unknown>>();
  const outcomes: ToolOutcome[] = [];
  for (const message of messages) {
    if (typeof message.content === "string") continue;
    for (const part of message.content) {
      if (part.type === "tool-call") inputs.set(part.toolCallId, (part.input ?? {}) as Record<string, unknown>);
      if (part.type === "tool-result") {
        const output = part.output;
        const value = output.type === "json" ? output.value : output.type === "text" ? output.value : undefined;
        outcomes.push({ toolName: part.toolName, input: inputs.get(part.toolCallId) ?? {}, output: value });
      }
    }
  }
  return outcomes;
}

function recalled(output: unknown): Array<{ id: string; name: string; type: string }> {
  if (!Array.isArray(output)) return [];
  return (
    output
      .map((item) => (item as { entity?: { id: string; name: string; type: string } }).entity)
      .filter((e): e is { id: string; name: string; type: string } => Boolean(e?.id))
      // A memory from email or another app comes fenced as data (agents/turn/tools/untrusted-memory.ts);
      // a reply shows the name alone.
      .map((e) => ({ ...e, name: e.name.replace(/<\/?(?:email|app)-data>/g, "") }))
  );
}

function recalledFacts(output: unknown): string[] {
  if (!Array.isArray(output)) return [];
  return output
    .map((item) => (item as { fact?: { statement?: string } }).fact?.statement)
    .filter((statement): statement is string => Boolean(statement));
}

function recalledNames(output: unknown): string[] {
  return recalled(output).map((e) => e.name);
}

function cleanTitle(raw: string, type: string): { name: string; properties: Record<string, string> } {
  const properties: Record<string, string> = {};
  let name = raw.replace(/[.!?]+$/, "").trim();
  name = name.replace(/\s+(?:yesterday|today|last (?:night|week|month|year)|this (?:morning|week|month|year)|again)$/i, "");
  const by = /^(.+?)\s+by\s+(.+)$/i.exec(name);
  if (by?.[1] && by[2] && (type === "book" || type === "movie")) {
    name = by[1];
    properties[type === "book" ? "author" : "director"] = stripQuotes(by[2]);
  }
  name = name.replace(/^(?:the (?:book|novel|movie|film)|a book called|a movie called|a film called)\s+/i, "");
  return { name: stripQuotes(name), properties };
}

function stripQuotes(value: string): string {
  return value
    .trim()
    .replace(/^["'“‘«]+|["'”’»]+$/g, "")
    .trim();
}

function promptSize(prompt: LanguageModelV4Message[]): number {
  return prompt.reduce((n, m) => n + Math.ceil(JSON.stringify(m.content).length / 4), 0);
}
