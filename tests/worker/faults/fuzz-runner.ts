// The fuzzing harness of fuzz-messenger-sign-in.test.ts and fuzz-api.test.ts: the seed, the cases run
// eight at a time against the Worker with the invariants every response must hold (never a 5xx, every
// error the JSON shape {error:{code,message,requestId}}), the body families every JSON endpoint gets
// (random bytes, truncated and deeply nested JSON, a wrong type in every field, bodies over the limit,
// Unicode edge cases, wrong content types, empty bodies), and the Worker's log lines muted and a count
// of cases and statuses per endpoint logged after each file. Test code only.
import { afterAll, beforeAll, expect, vi } from "vitest";
import {
  deepArray,
  deepObject,
  expectErrorShape,
  fetchWorker,
  fieldPaths,
  type Fuzz,
  LONE_SURROGATE_JSON,
  streamedBody,
  UNICODE_EDGES,
  withField,
  wrongValues,
} from "./support";

export const SEED = 0x50ba_f022;
export const ORIGIN = "https://soma.test";

export interface Case {
  label: string;
  path: string;
  init: RequestInit;
}

export const tally = new Map<string, number>();
const statuses = new Map<string, Map<number, number>>();

export function record(endpoint: string, status: number) {
  const seen = statuses.get(endpoint) ?? new Map<number, number>();
  seen.set(status, (seen.get(status) ?? 0) + 1);
  statuses.set(endpoint, seen);
}

/** Runs `cases` (8 at a time) and checks the invariants every response must hold; stops at the first failure. */
export async function run(
  endpoint: string,
  cases: Case[],
  options: {
    database?: boolean;
    jsonErrors?: (response: Response, c: Case) => boolean;
    each?: (c: Case, response: Response) => Promise<void>;
  } = {},
) {
  tally.set(endpoint, (tally.get(endpoint) ?? 0) + cases.length);
  const queue = [...cases];
  const worker = async () => {
    for (let c = queue.shift(); c; c = queue.shift()) {
      const label = `${endpoint} — ${c.label}`;
      try {
        const response = await fetchWorker(c.path, c.init, { database: options.database ?? true });
        record(endpoint, response.status);
        expect(response.status, label).toBeLessThan(500);
        if (response.status >= 400 && (options.jsonErrors?.(response, c) ?? true)) await expectErrorShape(response.clone(), label);
        await options.each?.(c, response);
        if (!response.bodyUsed) await response.body?.cancel();
      } catch (error) {
        queue.length = 0; // the other workers stop too: nothing runs on into the next test
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

export const JSON_TYPE = { "content-type": "application/json" };
const WRONG_CONTENT_TYPES = [
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=xyz",
  "application/xml",
  "application/jsonx",
  "json",
  "",
  "text/json\u00e9",
];

/**
 * The body families every JSON endpoint gets: `valid` is a body the route accepts (used truncated,
 * with a wrong type in each field, under wrong content types); `limit` is the route's body limit.
 */
export function bodyCases(
  fuzz: Fuzz,
  path: string,
  headers: Record<string, string>,
  valid: unknown,
  limit: number,
  options: { skipPaths?: string[]; extraWrong?: Record<string, unknown[]>; wrongPerField?: number } = {},
): Case[] {
  const cases: Case[] = [];
  const post = (label: string, body: BodyInit | null | undefined, extra: Record<string, string> = JSON_TYPE): Case => ({
    label,
    path,
    init: { method: "POST", headers: { ...headers, ...extra }, ...(body === undefined ? {} : { body }) },
  });
  const text = JSON.stringify(valid);
  for (let i = 0; i < 6; i++) cases.push(post(`random bytes #${i}`, fuzz.bytes(fuzz.int(1, 4096))));
  for (let i = 0; i < 5; i++) cases.push(post(`truncated JSON #${i}`, text.slice(0, fuzz.int(1, text.length - 1))));
  // Deep enough for any recursive parser or validator, and inside the limit.
  const depth = Math.min(Math.floor(limit / 12), 50_000);
  cases.push(post(`nested arrays, depth ${depth}`, deepArray(depth)));
  cases.push(post(`nested objects, depth ${Math.floor(depth / 3)}`, deepObject(Math.floor(depth / 3))));
  for (const [i, path_] of fuzz
    .some(
      fieldPaths(valid).filter((p) => p.length > 0 && !options.skipPaths?.includes(p.join("."))),
      3,
    )
    .entries()) {
    cases.push(
      post(
        `deep nesting in ${path_.join(".")} #${i}`,
        JSON.stringify(withField(valid, path_, "__DEEP__")).replace('"__DEEP__"', deepArray(Math.floor(depth / 2))),
      ),
    );
  }
  for (const field of fieldPaths(valid)) {
    const name = field.join(".");
    if (!name || options.skipPaths?.includes(name)) continue;
    let current: unknown = valid;
    for (const key of field) current = (current as Record<string, unknown>)[key];
    const wrong = [...fuzz.some(wrongValues(current), options.wrongPerField ?? 2), ...(options.extraWrong?.[name] ?? [])];
    for (const value of wrong)
      cases.push(post(`${name} = ${JSON.stringify(value)?.slice(0, 40)}`, JSON.stringify(withField(valid, field, value))));
  }
  // Over the limit: declared, declared but lying (small length, big body), and streamed with no length.
  const big = JSON.stringify(withField(valid, fieldPaths(valid).find((p) => p.length > 0)!, "x".repeat(limit + 1024)));
  cases.push(post(`huge body, ${big.length} bytes with content-length`, big, { ...JSON_TYPE, "content-length": String(big.length) }));
  cases.push(post(`huge body, ${big.length} bytes streamed`, streamedBody(big)));
  cases.push(
    post(
      `huge body of random bytes, streamed`,
      streamedBody(String.fromCharCode(...fuzz.bytes(2048)).repeat(Math.ceil((limit + 1) / 2048))),
    ),
  );
  cases.push(post(`body declaring a small content-length`, big, { ...JSON_TYPE, "content-length": "10" }));
  // Unicode where it can never be valid (the top level, keys), and lone surrogates as escapes.
  cases.push(post("a lone surrogate string as the body", LONE_SURROGATE_JSON));
  cases.push(post("a NUL string as the body", '"\\u0000"'));
  cases.push(post("emoji keys", JSON.stringify({ "🧠": 1, "\u202e": "\u0000" })));
  for (const edge of fuzz.some(UNICODE_EDGES, 3)) cases.push(post(`unicode body ${JSON.stringify(edge)}`, edge));
  // Content types and empty bodies.
  for (const type of WRONG_CONTENT_TYPES) cases.push(post(`valid body as ${JSON.stringify(type)}`, text, { "content-type": type }));
  cases.push(post("the valid body with no content-type header", text, {}));
  cases.push(post("empty body", ""));
  cases.push(post("no body at all", undefined));
  cases.push(post("whitespace body", "   \n\t  "));
  cases.push(post("JSON null", "null"));
  cases.push(post("JSON array of the valid body", JSON.stringify([valid])));
  return cases;
}

/**
 * Called at the top of each fuzz file. The app logs every refusal it finds worth a line (mail pushes,
 * failed commands): kept out of the output while the file runs, counted instead, and the file's cases
 * and statuses per endpoint logged after its last test. The Inngest SDK's own logger writes around this.
 */
export function muteLogsAndTally(): void {
  let muted = 0;
  beforeAll(() => {
    for (const method of ["log", "info", "warn", "error", "debug"] as const)
      vi.spyOn(console, method).mockImplementation(() => void muted++);
  });

  afterAll(() => {
    vi.restoreAllMocks();
    console.log(`fuzz: ${muted} log lines of the Worker muted`);
    const total = [...tally.values()].reduce((a, b) => a + b, 0);
    for (const [endpoint, count] of tally) {
      const seen = [...(statuses.get(endpoint) ?? new Map<number, number>())]
        .sort(([a], [b]) => a - b)
        .map(([s, n]) => `${s}×${n}`)
        .join(" ");
      console.log(`fuzz ${endpoint}: ${count} cases (${seen})`);
    }
    console.log(`fuzz total: ${total} cases over ${tally.size} endpoints`);
  });
}
