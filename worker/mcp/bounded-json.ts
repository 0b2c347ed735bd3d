// An MCP answer within its size (issue 25): whatever a memory holds (an import may give it 100 details
// of 20,000 characters each), the JSON an app receives stays under the cap. Long values are shortened
// first, each keeping its start; then lists lose items from their end, the longest list first; an answer
// that still cannot fit says so instead. A fenced value (<email-data>…</email-data>) is shortened inside
// its fence, never cut through it, so the fence always closes.
import { cut } from "../../platform/clean-text";

/** Each step shortens strings to `text` characters and every list and object to `items` entries. */
const STEPS: Array<{ text: number; items: number }> = [
  { text: 2_000, items: 1_000 },
  { text: 500, items: 200 },
  { text: 200, items: 50 },
  { text: 80, items: 20 },
  { text: 40, items: 5 },
];
const FENCED = /^(<([a-z]+-data)>)([\s\S]*)(<\/\2>)$/;

/** `value` as JSON of at most `max` characters. */
export function boundedJson(value: unknown, max: number): string {
  const whole = JSON.stringify(value);
  if (whole.length <= max) return whole;
  for (const step of STEPS) {
    const fitted = fitByLists(shrink(value, step), max);
    if (fitted) return fitted;
  }
  return JSON.stringify({ truncated: "This answer is too large to send whole. Ask for less: a smaller limit, or one memory by id." });
}

function shorten(text: string, length: number): string {
  if (text.length <= length) return text;
  const fenced = FENCED.exec(text);
  if (fenced) return `${fenced[1]}${shorten(fenced[3] ?? "", length)}${fenced[4]}`;
  return `${cut(text, length - 1)}…`;
}

function shrink(value: unknown, step: { text: number; items: number }): unknown {
  if (typeof value === "string") return shorten(value, step.text);
  if (Array.isArray(value)) return value.slice(0, step.items).map((item) => shrink(item, step));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value)
        .slice(0, step.items)
        .map(([key, item]) => [key, shrink(item, step)]),
    );
  }
  return value;
}

/** `value` as JSON within `max`, its longest top-level list losing items from the end; null if it cannot fit. */
function fitByLists(value: unknown, max: number): string | null {
  const note = "values and lists were shortened to fit one answer";
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    const text = JSON.stringify(value);
    return text.length <= max ? text : null;
  }
  const record = value as Record<string, unknown>;
  let text = JSON.stringify({ ...record, truncated: note });
  if (text.length <= max) return text;
  const key = Object.keys(record)
    .filter((k) => Array.isArray(record[k]))
    .sort((a, b) => (record[b] as unknown[]).length - (record[a] as unknown[]).length)[0];
  if (!key) return null;
  const list = [...(record[key] as unknown[])];
  while (list.length > 0) {
    list.pop();
    text = JSON.stringify({ ...record, [key]: list, truncated: `only the first ${list.length} ${key} fit in one answer; ${note}` });
    if (text.length <= max) return text;
  }
  return null;
}
