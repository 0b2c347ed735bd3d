// Fact extraction: the durable claims a person made about themselves in one message ("I moved to
// Berlin" → "Lives in Berlin", subject "home city"), as structured output of the configured model.
// The offline model answers the same request with its sentence rules (agents/integrations/model/offline-facts.ts).
import { generateText, Output, type LanguageModel } from "ai";
import { z } from "zod";
import { forwardedParts } from "./telegram-message";
import { startOf } from "./turn/tools/memory-time";

export const FACT_CATEGORIES = [
  "personal",
  "location",
  "work",
  "relationship",
  "preference",
  "health",
  "habit",
  "goal",
  "general",
] as const;

export const ExtractedFact = z.object({
  statement: z.string().trim().min(3).max(300).describe('The claim in the third person without a subject pronoun, e.g. "Lives in Berlin"'),
  category: z.enum(FACT_CATEGORIES),
  subject: z
    .string()
    .trim()
    .max(80)
    .describe(
      'What the claim is about, so that a later claim on the same subject replaces it: "home city", "employer", "diet", "sister\'s name". Include the value for things a person has many of: "likes: jazz".',
    ),
  confidence: z.number().min(0).max(1).describe("How sure the person sounded: 1 for a plain statement, lower for hedged ones"),
  since: z
    .string()
    .regex(/^\d{4}(-\d{2}(-\d{2})?)?$/)
    .nullish()
    .describe(
      'Since when it holds, only where the person said so: a year "2019", a month "2019-03" or a day "2019-03-14" ("last year" counts back from today\'s date); otherwise null',
    ),
});
export type ExtractedFact = z.infer<typeof ExtractedFact>;

const Extraction = z.object({ facts: z.array(ExtractedFact).max(10) });

/** Marks the extraction request; the offline model recognises it by this first line. */
export const FACT_EXTRACTION_MARKER = "Extract durable facts.";

const INSTRUCTIONS = `${FACT_EXTRACTION_MARKER}
You read one message a person sent to their assistant and list the durable facts it states about the
person themselves: where they live, work, their relationships, preferences, health, habits, goals.
Leave out passing events (what they did today), questions, requests, and anything about other people
that is not a relationship to the person.
Most messages contain no durable fact: then answer an empty list.`;

/** The durable facts in `text` (an empty list for most messages), said on `today` (YYYY-MM-DD). */
export async function extractFacts(model: LanguageModel, text: string, today: string, abortSignal?: AbortSignal): Promise<ExtractedFact[]> {
  // A forward is someone else's words: the person said nothing of their own in it (issue 25). They keep a
  // fact from it by saying so themselves, in a message of their own.
  if (!text.trim() || text.trim().startsWith("/") || forwardedParts(text)) return [];
  const { output } = await generateText({
    model,
    system: `${INSTRUCTIONS}\nToday is ${today}.`,
    prompt: text.slice(0, 4000),
    output: Output.object({ schema: Extraction }),
    maxRetries: 1,
    ...(abortSignal ? { abortSignal } : {}),
  });
  return output.facts;
}

/** The first instant of a fact's `since` (a year, a month or a day) on a clock in `zone`. */
export function sinceInstant(since: string, zone: string): Date {
  const [year, month = "01", day = "01"] = since.split("-");
  return startOf(`${year}-${month}-${day}`, zone);
}
