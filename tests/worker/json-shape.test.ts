// Guards the JSON shape scanner (platform/json-shape.ts) and readJson: a body's depth and number of values
// are measured as it streams in, whatever splits it into pieces, and a bomb is refused (413, or 400 for
// depth) before JSON.parse builds it and before the rest of it is read.
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type JsonShapeLimits, JsonShapeScanner, jsonShapeProblem } from "../../platform/json-shape";
import { ApiError } from "../../worker/errors";
import { readJson } from "../../worker/validation";
import { call, countedBody, newPerson, sessionCookie } from "./helpers";

const LOOSE: JsonShapeLimits = { maxDepth: 1000, maxNodes: 1_000_000 };

/** Values the scanner counted in `text` fed in one piece, or the problem it found. */
function count(text: string, limits = LOOSE): number {
  const scanner = new JsonShapeScanner(limits);
  scanner.feed(text);
  expect(scanner.problem).toBeNull();
  return scanner.nodes;
}

/** The same count with `text` cut into pieces at every place (one cut) and into single characters. */
function countInPieces(text: string): number[] {
  const counts: number[] = [];
  for (let cut = 1; cut < text.length; cut++) {
    const scanner = new JsonShapeScanner(LOOSE);
    scanner.feed(text.slice(0, cut));
    scanner.feed(text.slice(cut));
    counts.push(scanner.nodes);
  }
  const single = new JsonShapeScanner(LOOSE);
  for (const character of text) single.feed(character);
  counts.push(single.nodes);
  return counts;
}

function bomb(objects: number): string {
  return `{"a":[${"{},".repeat(objects - 1)}{}]}`;
}

describe("JsonShapeScanner", () => {
  it("counts every value once: objects, arrays, keys, strings, numbers and literals", () => {
    expect(count("{}")).toBe(1);
    expect(count("[]")).toBe(1);
    expect(count('{"a":1}')).toBe(3);
    expect(count('[1,-2.5e+3,true,false,null,"x"]')).toBe(7);
    expect(count(' { "a" : [ 1 , 2 ] , "b" : { } } ')).toBe(7);
    expect(count("12345")).toBe(1);
    expect(count("null")).toBe(1);
  });

  it("ignores quotes, brackets and braces inside strings, escaped quotes and backslashes included", () => {
    expect(count('{"a":"x\\"[[[{{{\\\\"}')).toBe(3);
    expect(count('["]]]]", "{{{{", "\\"]", "\\\\", "\\\\\\"["]')).toBe(6);
    expect(jsonShapeProblem(`["${"[".repeat(100)}"]`, { maxDepth: 2, maxNodes: 10 })).toBeNull();
  });

  it("gives the same count wherever the text is split: inside an escape, a number, a literal or a key", () => {
    for (const text of ['{"k\\"ey":"va\\\\l\\"ue"}', "[12345,-0.5e-10,true,false,null]", '{"a":["\\u0041",{"b":[]}]}']) {
      const whole = count(text);
      expect(new Set(countInPieces(text)), text).toEqual(new Set([whole]));
    }
  });

  it("refuses a nesting deeper than maxDepth, and not one at it", () => {
    expect(jsonShapeProblem("[[[]]]", { maxDepth: 3, maxNodes: 100 })).toBeNull();
    expect(jsonShapeProblem("[[[[]]]]", { maxDepth: 3, maxNodes: 100 })).toEqual({ kind: "depth", limit: 3 });
    expect(jsonShapeProblem('{"a":{"b":{"c":{}}}}', { maxDepth: 3, maxNodes: 100 })).toEqual({ kind: "depth", limit: 3 });
    // Depth is nesting, not the number of containers: siblings do not add up.
    expect(jsonShapeProblem(`[${"[],".repeat(50)}[]]`, { maxDepth: 2, maxNodes: 100 })).toBeNull();
  });

  it("refuses more than maxNodes values, and not exactly maxNodes", () => {
    const text = bomb(1000); // 1000 objects + the array + the key + the outer object
    expect(count(text)).toBe(1003);
    expect(jsonShapeProblem(text, { maxDepth: 10, maxNodes: 1003 })).toBeNull();
    expect(jsonShapeProblem(text, { maxDepth: 10, maxNodes: 1002 })).toEqual({ kind: "nodes", limit: 1002 });
  });

  it("stops at the first limit crossed and ignores every later piece", () => {
    const scanner = new JsonShapeScanner({ maxDepth: 10, maxNodes: 5 });
    expect(scanner.feed("[1,2,3,")).toBe(true);
    expect(scanner.feed("4,5,6]")).toBe(false);
    expect(scanner.problem).toEqual({ kind: "nodes", limit: 5 });
    expect(scanner.feed("[[[[[[[[[[[[[[[[")).toBe(false);
    expect(scanner.problem).toEqual({ kind: "nodes", limit: 5 });
  });
});

describe("readJson", () => {
  const app = new Hono()
    .post("/", async (c) => c.json({ value: await readJson(c, z.unknown(), { maxDepth: 8, maxNodes: 1000 }) }))
    .onError((error, c) => (error instanceof ApiError ? c.json({ code: error.code }, error.status) : c.json({ code: "internal" }, 500)));
  const post = (body: BodyInit) =>
    app.request("/", { method: "POST", headers: { "content-type": "application/json" }, body, duplex: "half" } as RequestInit);

  it("refuses a streamed bomb with 413 after reading no more than the limit needs", async () => {
    const body = countedBody(bomb(100_000), 4096);
    const response = await post(body.stream);
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({ code: "payload_too_large" });
    // 1000 values of `{},` are 3 kB: the first piece or two, of 74.
    expect(body.pieces).toBeGreaterThan(70);
    expect(body.pulls()).toBeLessThanOrEqual(2);
  });

  it("refuses a streamed nesting too deep with 400, also after the first piece", async () => {
    const body = countedBody("[".repeat(100_000), 4096);
    const response = await post(body.stream);
    expect(response.status).toBe(400);
    expect(body.pulls()).toBe(1);
  });

  it("parses a body within the limits that arrives in many pieces", async () => {
    const value = { list: Array.from({ length: 150 }, (_, i) => ({ i, s: `"[{${i}\\` })) };
    const body = countedBody(JSON.stringify(value), 7);
    const response = await post(body.stream);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ value });
  });
});

describe("an ordinary route refuses a JSON bomb before parsing it", () => {
  it("POST /api/chat: 63 kB of empty objects (under its 64 kB cap) → 413, the JSON error shape", async () => {
    const cookie = await sessionCookie(await newPerson("bomb"));
    const body = `{"message":[${"{},".repeat(21_000)}{}]}`;
    expect(body.length).toBeLessThan(64 * 1024);
    const response = await call("/api/chat", {
      method: "POST",
      headers: { cookie, origin: "https://soma.test", "content-type": "application/json" },
      body,
    });
    expect(response.status).toBe(413);
    const error = ((await response.json()) as { error: { code: string; message: string; requestId: string } }).error;
    expect(error.code).toBe("payload_too_large");
    expect(error.message).toContain("more than 20000 values");
    expect(error.requestId).toBeTruthy();
  });

  it("PATCH /api/memories/:id: a nesting deeper than 32 → 400 naming the limit", async () => {
    const cookie = await sessionCookie(await newPerson("deep"));
    const response = await call(`/api/memories/${crypto.randomUUID()}`, {
      method: "PATCH",
      headers: { cookie, origin: "https://soma.test", "content-type": "application/json" },
      body: `{"name":${"[".repeat(40)}${"]".repeat(40)}}`,
    });
    expect(response.status).toBe(400);
    const error = ((await response.json()) as { error: { code: string; message: string } }).error;
    expect(error).toMatchObject({ code: "bad_request", message: "The JSON nests deeper than 32 levels." });
  });
});
