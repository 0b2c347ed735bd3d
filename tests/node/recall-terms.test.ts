// Guards the words recall looks for (db/repositories/recall-terms.ts): in a question bounded in time,
// the words that describe the window are not looked for as names; without a window they are.
import { describe, expect, it } from "vitest";
import { followingPrefix, nameLexeme, terms } from "../../db/repositories/recall-terms";

describe("a recall question's words", () => {
  it("leaves out what describes the window in a question bounded in time", () => {
    expect(terms("What did I do that week?", true).words).toEqual([]);
    expect(terms("what happened last month at the Rose Garden", true).words).toEqual(["rose", "garden"]);
  });

  it("keeps them without a window: they may be a name's words", () => {
    expect(terms("Last Week Tonight", false)).toMatchObject({
      words: ["last", "week", "tonight"],
      nameTerms: ["last:A", "week:A", "tonig"],
    });
  });
});

describe("a word's beginning as a range of the person's words (search.entity_words, \"C\" collation)", () => {
  it("is a whole word for `word:A`, any word it begins otherwise", () => {
    expect(terms("rose harb", false).nameTerms.map(nameLexeme)).toEqual([
      { lexeme: "rose", whole: true },
      { lexeme: "harb", whole: false },
    ]);
  });

  it("ends at the first string past every string that begins with it", () => {
    expect(followingPrefix("harbo")).toBe("harbp");
    expect(followingPrefix("достоевск")).toBe("достоевсл");
    expect(followingPrefix("caf\u00e9")).toBe("caf\u00ea");
    // Past the largest character the one before it grows; surrogates, which text cannot hold, are skipped.
    expect(followingPrefix("a\u{10FFFF}")).toBe("b");
    expect(followingPrefix("\uD7FF")).toBe("\uE000");
    expect(followingPrefix("\u{1F600}")).toBe("\u{1F601}");
  });
});
