// Issue 20: a model's Markdown reaches Telegram as formatting, with every character the model wrote
// visible. Each message formatForTelegram makes is parsed here the way the Bot API parses it
// (tests/setup/telegram-html.ts, which the stand-in uses too): what the person sees is checked, not the HTML.
import { describe, expect, it } from "vitest";
import { formatForTelegram, TELEGRAM_MESSAGE_LIMIT } from "../../agents/integrations/telegram-format";
import { parseTelegramHtml, TelegramParseError } from "../setup/telegram-html";

/** What the person sees of each message, checked to parse and to match the plain text kept for a fallback. */
function seen(markdown: string, limit?: number) {
  return formatForTelegram(markdown, limit).map((message) => {
    const view = parseTelegramHtml(message.html);
    expect(view.text).toBe(message.plain.trim());
    return view;
  });
}

const entity = (view: ReturnType<typeof parseTelegramHtml>, type: string) =>
  view.entities.filter((e) => e.type === type).map((e) => view.text.slice(e.offset, e.offset + e.length));

describe("formatForTelegram", () => {
  it("turns bold, italic, strikethrough, code, code blocks, links, lists and quotes into Telegram's entities", () => {
    const [view] = seen(
      [
        "# Books",
        "You read **Dune** and *Hyperion*, not ~~Emma~~. Run `npm test`.",
        "```ts\nconst a = 1;\n```",
        "- one\n- two\n  1. nested",
        "> a quote",
        "See [the docs](https://example.com/a?b=1&c=2).",
      ].join("\n\n"),
    );
    expect(entity(view!, "bold")).toEqual(["Books", "Dune"]);
    expect(entity(view!, "italic")).toEqual(["Hyperion"]);
    expect(entity(view!, "strikethrough")).toEqual(["Emma"]);
    expect(entity(view!, "code")).toEqual(["npm test"]);
    expect(view!.entities.find((e) => e.type === "pre")).toMatchObject({ language: "ts" });
    expect(entity(view!, "pre")).toEqual(["const a = 1;"]);
    expect(entity(view!, "blockquote")).toEqual(["a quote"]);
    expect(view!.entities.find((e) => e.type === "text_link")).toMatchObject({ url: "https://example.com/a?b=1&c=2" });
    expect(view!.text).toContain("• one\n• two\n  1. nested");
    expect(view!.text).not.toMatch(/[*~`#>]/);
  });

  it("keeps every character the model wrote visible: comparisons, ampersands, asterisks and underscores", () => {
    const [view] = seen("if x < y && y > z then 5 * 3 = 15; a_b_c and snake_case_name; 2 * 3 * 4; &amp; stays &amp;");
    expect(view!.text).toBe("if x < y && y > z then 5 * 3 = 15; a_b_c and snake_case_name; 2 * 3 * 4; &amp; stays &amp;");
    expect(view!.entities).toEqual([]);
  });

  it("shows HTML the model wrote as text, never as formatting or markup", () => {
    const [view] = seen('Look: <b>not bold</b> <a href="https://evil.example">x</a>\n\n<script>alert(1)</script>');
    expect(view!.text).toContain('<b>not bold</b> <a href="https://evil.example">x</a>');
    expect(view!.text).toContain("<script>alert(1)</script>");
    expect(view!.entities).toEqual([]);
  });

  it("drops links a person should not follow but keeps their words", () => {
    const [view] = seen("[click](javascript:alert(1)) and [mail](mailto:a@b.c)");
    expect(view!.text).toBe("click and mail");
    expect(view!.entities.map((e) => e.url)).toEqual(["mailto:a@b.c"]);
  });

  it("follows Telegram's nesting rules: code inside bold, a quote inside a quote", () => {
    const [view] = seen("**bold `code` bold**\n\n> outer\n> > inner **b**");
    expect(entity(view!, "code")).toEqual(["code"]);
    expect(entity(view!, "bold")).toEqual(["bold ", " bold", "b"]);
    expect(entity(view!, "blockquote")).toHaveLength(1);
  });

  it("writes a table as aligned monospace text", () => {
    const [view] = seen("| book | year |\n|---|---|\n| Dune | 1965 |");
    expect(entity(view!, "pre")[0]).toBe("book │ year\n─────┼─────\nDune │ 1965");
  });

  it("splits a long reply between paragraphs, each message within the limit", () => {
    const paragraph = `${"A **bold** word and `code` here. ".repeat(20)}`.trim();
    const views = seen(Array.from({ length: 30 }, () => paragraph).join("\n\n"));
    expect(views.length).toBeGreaterThan(1);
    for (const view of views) {
      expect(view.text.length).toBeLessThanOrEqual(TELEGRAM_MESSAGE_LIMIT);
      expect(view.text.startsWith("A bold")).toBe(true);
    }
    expect(views.reduce((n, v) => n + entity(v, "bold").length, 0)).toBe(30 * 20);
  });

  it("splits a code block longer than a message without cutting its tag, reopening it in the next", () => {
    const lines = Array.from({ length: 400 }, (_, i) => `line ${i} < ${i + 1} && more`);
    const views = seen(`\`\`\`\n${lines.join("\n")}\n\`\`\``);
    expect(views.length).toBeGreaterThan(1);
    for (const view of views) expect(view.entities[0]).toMatchObject({ type: "pre", offset: 0, length: view.text.length });
    expect(views.map((v) => v.text).join("\n")).toBe(lines.join("\n"));
  });

  it("never cuts a character made of two UTF-16 units", () => {
    const views = seen("😀".repeat(3000), 1001);
    expect(views.map((v) => v.text).join("")).toBe("😀".repeat(3000));
  });

  it("sends something for text that renders to nothing", () => {
    expect(formatForTelegram("   ")[0]!.plain).toBe("");
    expect(seen("[]()")).toHaveLength(1);
  });

  it("splits text that renders to nothing like any other, when it is longer than a message (issue 25)", () => {
    // Only link-reference definitions: no block to render, so the words go out as written, in pieces.
    const definitions = Array.from({ length: 120 }, (_, i) => `[ref-${i}]: https://example.com/a/long/path/${i} "Title ${i}"`);
    const markdown = definitions.join("\n");
    expect(markdown.length).toBeGreaterThan(TELEGRAM_MESSAGE_LIMIT);
    const views = seen(markdown);
    expect(views.length).toBeGreaterThan(1);
    for (const view of views) expect(view.text.length).toBeLessThanOrEqual(TELEGRAM_MESSAGE_LIMIT);
    expect(views.map((v) => v.text).join("\n")).toBe(markdown);
    expect(seen("x".repeat(9000), 4096).map((v) => v.text.length)).toEqual([4096, 4096, 808]);
  });
});

describe("the stand-in's parse mode refuses what Telegram refuses", () => {
  it.each([
    ["a bare <", "x < y", /can.t parse entities/],
    ["an unknown tag", "<h1>x</h1>", /Unsupported start tag "h1"/],
    ["an unclosed tag", "<b>x", /Can't find end tag corresponding to start tag "b"/],
    ["crossed tags", "<b><i>x</b></i>", /Unmatched end tag/],
    ["code inside bold", "<b><code>x</code></b>", /can't be inside/],
    ["a quote in a quote", "<blockquote><blockquote>x</blockquote></blockquote>", /can't be nested/],
    ["too long a text", "x".repeat(4097), /message is too long/],
    ["an empty text", "<b> </b>", /message text is empty/],
  ])("%s", (_, html, error) => {
    expect(() => parseTelegramHtml(html)).toThrow(TelegramParseError);
    expect(() => parseTelegramHtml(html)).toThrow(error);
  });

  it("decodes the four named entities and numeric ones, and leaves another & as it is", () => {
    expect(parseTelegramHtml("&lt;&gt;&amp;&quot;&#33;&#x41; &nbsp; & x").text).toBe('<>&"!A &nbsp; & x');
  });
});
