// A JSON text's shape, measured before JSON.parse builds it: how deep it nests and how many values it
// holds. JSON.parse's cost is the object graph, not the bytes: `{"a":[{},{},…]}` of 8 MB is 2.7 million
// objects (179 MB of heap in V8), so a byte cap alone lets one request fill an isolate. The scanner reads
// the text as it streams in, keeps a few counters (no stack, no copy), and stops at the first limit
// crossed, so a bomb is refused after reading only as much of it as the limits allow.
// It does not validate: JSON.parse still does, on a text the scanner found small enough to build.

export interface JsonShapeLimits {
  /** Deepest nesting of arrays and objects (the top level is depth 1). */
  maxDepth: number;
  /** Most values: every object, array, string (keys too), number, true, false and null counts one. */
  maxNodes: number;
}

export type JsonShapeProblem = { kind: "depth"; limit: number } | { kind: "nodes"; limit: number };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/** Bytes that end a number or literal (t, f, n, digits and `-` start one). */
function isDelimiter(code: number): boolean {
  return code === 0x2c || code === 0x3a || code === CLOSE_BRACE || code === CLOSE_BRACKET || code <= 0x20;
}

export class JsonShapeScanner {
  #depth = 0;
  #nodes = 0;
  #inString = false;
  #escaped = false;
  #inScalar = false;
  #problem: JsonShapeProblem | null = null;

  constructor(private readonly limits: JsonShapeLimits) {}

  /** The first limit crossed so far, or null. */
  get problem(): JsonShapeProblem | null {
    return this.#problem;
  }

  get nodes(): number {
    return this.#nodes;
  }

  /** Scans the next piece of the text; false once a limit is crossed (later pieces are ignored). */
  feed(chunk: string): boolean {
    if (this.#problem) return false;
    const { maxDepth, maxNodes } = this.limits;
    for (let i = 0; i < chunk.length; i++) {
      const code = chunk.charCodeAt(i);
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (code === BACKSLASH) this.#escaped = true;
        else if (code === QUOTE) this.#inString = false;
        continue;
      }
      if (this.#inScalar) {
        if (!isDelimiter(code)) continue;
        this.#inScalar = false;
      }
      if (code === QUOTE) {
        this.#inString = true;
      } else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
        if (++this.#depth > maxDepth) {
          this.#problem = { kind: "depth", limit: maxDepth };
          return false;
        }
      } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
        this.#depth--;
        continue;
      } else if (isDelimiter(code)) {
        continue;
      } else {
        this.#inScalar = true;
      }
      if (++this.#nodes > maxNodes) {
        this.#problem = { kind: "nodes", limit: maxNodes };
        return false;
      }
    }
    return true;
  }
}

/** The first limit `text` crosses, or null when it is small enough to parse. */
export function jsonShapeProblem(text: string, limits: JsonShapeLimits): JsonShapeProblem | null {
  const scanner = new JsonShapeScanner(limits);
  scanner.feed(text);
  return scanner.problem;
}

/** A sentence for a person or a client: what the limit is. */
export function describeShapeProblem(problem: JsonShapeProblem): string {
  return problem.kind === "depth"
    ? `The JSON nests deeper than ${problem.limit} levels.`
    : `The JSON holds more than ${problem.limit} values.`;
}
