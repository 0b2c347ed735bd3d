// Guards how replies fit Telegram: at most 4096 characters a message, split at paragraph, line or
// word boundaries, nothing lost or reordered.
import { describe, expect, it } from "vitest";
import { splitMessage, TELEGRAM_MESSAGE_LIMIT } from "../../agents/telegram-sender";

describe("splitMessage", () => {
  it("keeps a short reply whole", () => {
    expect(splitMessage("Noted: Dune (book).")).toEqual(["Noted: Dune (book)."]);
  });

  it("splits a long reply at paragraph breaks, each piece within the limit, losing nothing", () => {
    const paragraphs = Array.from({ length: 30 }, (_, i) => `Paragraph ${i}: ${"word ".repeat(60).trim()}`);
    const text = paragraphs.join("\n\n");
    const pieces = splitMessage(text);
    expect(pieces.length).toBeGreaterThan(1);
    for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(TELEGRAM_MESSAGE_LIMIT);
    expect(pieces.join("\n\n").replace(/\s+/g, " ")).toBe(text.replace(/\s+/g, " "));
    expect(pieces.every((p) => p.startsWith("Paragraph"))).toBe(true);
  });

  it("cuts a single unbroken run at the limit", () => {
    const pieces = splitMessage("x".repeat(10_000));
    expect(pieces.map((p) => p.length)).toEqual([4096, 4096, 1808]);
  });
});
