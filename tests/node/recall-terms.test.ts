// Guards the words recall looks for (db/repositories/recall-terms.ts): in a question bounded in time,
// the words that describe the window are not looked for as names; without a window they are.
import { describe, expect, it } from "vitest";
import { terms } from "../../db/repositories/recall-terms";

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
