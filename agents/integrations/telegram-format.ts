// A model's Markdown as Telegram messages: HTML parse mode, split into messages Telegram accepts.
//
// Models write GitHub-flavoured Markdown (**bold**, lists, `code`, fences, links, tables). Sent as it is,
// a person reads literal asterisks; sent as Telegram's own MarkdownV2, every `.`, `-` or `!` the model
// wrote unescaped makes the Bot API refuse the whole message. So the Markdown is parsed (marked's lexer:
// the GFM parser the docs build already uses, small, no DOM) and written out as Telegram HTML, where
// only `<`, `>` and `&` need escaping and every character the model wrote stays visible: text is always
// escaped, and HTML the model wrote is shown as text, never interpreted.
//
// Rendering goes through a flat list of segments (text plus the formatting open around it), so a reply
// longer than Telegram's 4096 characters is split between blocks where it can, inside a block where it
// must, closing every open tag at the end of a message and reopening it at the start of the next: no
// tag or entity is ever cut. Each message also carries its plain text, sent instead if Telegram still
// refuses the HTML ("can't parse entities"), so a reply is never lost to its formatting.
import { type Token, type Tokens, marked } from "marked";

/** Telegram's limit for one message, in UTF-16 code units of the text after entity parsing. */
export const TELEGRAM_MESSAGE_LIMIT = 4096;

type Tag = { name: "b" | "i" | "s" | "code" | "pre" | "blockquote" } | { name: "a"; href: string } | { name: "pre-code"; language: string };

interface Segment {
  text: string;
  tags: readonly Tag[];
}

/** One message: its HTML (parse_mode HTML) and the same text without formatting. */
export interface FormattedMessage {
  html: string;
  plain: string;
}

/** Links Telegram accepts and a person may follow. */
const SAFE_LINK = /^(?:https?:\/\/|mailto:|tg:\/\/)/i;

/** `markdown` as one or more Telegram messages, each at most `limit` characters after parsing. */
export function formatForTelegram(markdown: string, limit = TELEGRAM_MESSAGE_LIMIT): FormattedMessage[] {
  const blocks = renderBlocks(marked.lexer(markdown, { gfm: true }), []);
  // Markdown that renders to nothing (only link-reference definitions, say) goes out as it was written,
  // through the same packing and splitting as any reply: one message past the limit would be refused by
  // Telegram as HTML and again as plain text, and the reply lost (issue 25).
  const messages = pack(blocks.length > 0 ? blocks : [[{ text: markdown.trim(), tags: [] }]], limit).map(toMessage);
  return messages.length > 0 ? messages : [{ html: "", plain: "" }];
}

/** Each top-level block as its segments (blocks are separated by a blank line when sent). */
function renderBlocks(tokens: Token[], outer: readonly Tag[]): Segment[][] {
  const blocks: Segment[][] = [];
  for (const token of tokens) {
    const block = renderBlock(token, outer);
    if (block.some((s) => s.text.trim() !== "")) blocks.push(block);
  }
  return blocks;
}

function renderBlock(token: Token, outer: readonly Tag[]): Segment[] {
  switch (token.type) {
    case "paragraph":
    case "text":
      return "tokens" in token && token.tokens ? renderInline(token.tokens, outer) : [{ text: token.text, tags: outer }];
    case "heading":
      return renderInline((token as Tokens.Heading).tokens, [...outer, { name: "b" }]);
    case "code": {
      const code = token as Tokens.Code;
      const language = /^[\w+#.-]{1,32}$/.exec(code.lang ?? "")?.[0];
      return [{ text: code.text, tags: [...outer, language ? { name: "pre-code", language } : { name: "pre" }] }];
    }
    case "blockquote": {
      // Telegram does not nest quotes: a quote inside a quote is quoted once.
      const quoted = outer.some((t) => t.name === "blockquote") ? outer : [...outer, { name: "blockquote" } as const];
      return joinBlocks(renderBlocks((token as Tokens.Blockquote).tokens, quoted), "\n", quoted);
    }
    case "list":
      return renderList(token as Tokens.List, outer, 0);
    case "table":
      return [{ text: tableText(token as Tokens.Table), tags: [...outer, { name: "pre" }] }];
    case "hr":
      return [{ text: "———", tags: outer }];
    case "html":
      return [{ text: token.raw.trimEnd(), tags: outer }];
    case "space":
    case "def":
      return [];
    default:
      return [{ text: token.raw, tags: outer }];
  }
}

function renderList(list: Tokens.List, outer: readonly Tag[], depth: number): Segment[] {
  const segments: Segment[] = [];
  const indent = "  ".repeat(depth);
  const start = typeof list.start === "number" ? list.start : 1;
  list.items.forEach((item, index) => {
    if (index > 0) segments.push({ text: "\n", tags: outer });
    const marker = item.task ? (item.checked ? "☑ " : "☐ ") : list.ordered ? `${start + index}. ` : "• ";
    segments.push({ text: indent + marker, tags: outer });
    item.tokens.forEach((child, i) => {
      if (child.type === "list") {
        segments.push({ text: "\n", tags: outer }, ...renderList(child as Tokens.List, outer, depth + 1));
      } else if (child.type !== "space" && child.type !== "checkbox") {
        if (i > 0 && segments.at(-1)?.text !== indent + marker) segments.push({ text: `\n${indent}  `, tags: outer });
        segments.push(...renderBlock(child, outer));
      }
    });
  });
  return segments;
}

function renderInline(tokens: Token[], tags: readonly Tag[]): Segment[] {
  const segments: Segment[] = [];
  for (const token of tokens) {
    switch (token.type) {
      case "strong":
        segments.push(...renderInline((token as Tokens.Strong).tokens, [...tags, { name: "b" }]));
        break;
      case "em":
        segments.push(...renderInline((token as Tokens.Em).tokens, [...tags, { name: "i" }]));
        break;
      case "del":
        segments.push(...renderInline((token as Tokens.Del).tokens, [...tags, { name: "s" }]));
        break;
      case "codespan":
        segments.push({ text: token.text, tags: [...tags, { name: "code" }] });
        break;
      case "br":
        segments.push({ text: "\n", tags });
        break;
      case "link": {
        const link = token as Tokens.Link;
        const inner = renderInline(link.tokens, SAFE_LINK.test(link.href) ? [...tags, { name: "a", href: link.href }] : tags);
        segments.push(...inner);
        break;
      }
      case "image": {
        const image = token as Tokens.Image;
        const label = image.text || image.href;
        segments.push({ text: label, tags: SAFE_LINK.test(image.href) ? [...tags, { name: "a", href: image.href }] : tags });
        break;
      }
      case "text":
        if ("tokens" in token && token.tokens?.length) segments.push(...renderInline(token.tokens, tags));
        else segments.push({ text: token.text, tags });
        break;
      case "escape":
        segments.push({ text: token.text, tags });
        break;
      default:
        // Inline HTML and anything unknown: what the model wrote, shown as text.
        segments.push({ text: token.raw, tags });
    }
  }
  return segments;
}

/** A table as aligned monospace text (Telegram has no tables). */
function tableText(table: Tokens.Table): string {
  const rows = [table.header.map((cell) => cell.text), ...table.rows.map((row) => row.map((cell) => cell.text))];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? "").length)));
  const line = (row: string[]) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join(" │ ")
      .trimEnd();
  return [line(rows[0]!), widths.map((w) => "─".repeat(w)).join("─┼─"), ...rows.slice(1).map(line)].join("\n");
}

function joinBlocks(blocks: Segment[][], separator: string, tags: readonly Tag[]): Segment[] {
  return blocks.flatMap((block, i) => (i === 0 ? block : [{ text: separator, tags }, ...block]));
}

const length = (segments: Segment[]) => segments.reduce((n, s) => n + s.text.length, 0);

/** Blocks packed into messages of at most `limit` characters, split inside a block only when it alone is too long. */
function pack(blocks: Segment[][], limit: number): Segment[][] {
  const messages: Segment[][] = [];
  let current: Segment[] = [];
  const flush = () => {
    if (current.length > 0) messages.push(current);
    current = [];
  };
  for (const block of blocks) {
    const separator = current.length > 0 ? 2 : 0;
    if (length(current) + separator + length(block) <= limit) {
      if (separator) current.push({ text: "\n\n", tags: [] });
      current.push(...block);
      continue;
    }
    flush();
    if (length(block) <= limit) {
      current = [...block];
      continue;
    }
    for (const piece of splitBlock(block, limit)) {
      current = piece;
      flush();
    }
  }
  flush();
  return messages;
}

/** A block longer than `limit` cut into pieces, at a line break, else a space, else anywhere (not inside a surrogate pair). */
function splitBlock(block: Segment[], limit: number): Segment[][] {
  const pieces: Segment[][] = [];
  let piece: Segment[] = [];
  let room = limit;
  for (const segment of block) {
    let text = segment.text;
    while (text.length > room) {
      const cut = cutPoint(text, room, piece.length === 0);
      if (cut > 0) piece.push({ text: text.slice(0, cut), tags: segment.tags });
      text = text.slice(cut).replace(/^\n/, "");
      pieces.push(piece);
      piece = [];
      room = limit;
    }
    if (text) {
      piece.push({ text, tags: segment.tags });
      room -= text.length;
    }
  }
  if (piece.length > 0) pieces.push(piece);
  return pieces;
}

function cutPoint(text: string, room: number, mustCut: boolean): number {
  const window = text.slice(0, room + 1);
  const newline = window.lastIndexOf("\n");
  if (newline > room / 2) return newline;
  const space = window.lastIndexOf(" ");
  if (space > room / 2) return space;
  if (!mustCut && room < 200) return 0; // rather start the next message than end this one mid-word
  const code = text.charCodeAt(room - 1);
  return code >= 0xd800 && code <= 0xdbff ? room - 1 : room;
}

function toMessage(segments: Segment[]): FormattedMessage {
  // Leading and trailing blank lines are trimmed (Telegram trims them, and would count them first).
  while (segments.length > 0 && segments[0]!.text.trim() === "") segments.shift();
  while (segments.length > 0 && segments.at(-1)!.text.trim() === "") segments.pop();
  let html = "";
  let open: readonly Tag[] = [];
  for (const segment of segments) {
    const tags = allowedNesting(segment.tags);
    let common = 0;
    while (common < open.length && common < tags.length && sameTag(open[common]!, tags[common]!)) common++;
    for (let i = open.length - 1; i >= common; i--) html += closeTag(open[i]!);
    for (let i = common; i < tags.length; i++) html += openTag(tags[i]!);
    html += escapeHtml(segment.text);
    open = tags;
  }
  for (let i = open.length - 1; i >= 0; i--) html += closeTag(open[i]!);
  return { html, plain: segments.map((s) => s.text).join("") };
}

/**
 * Telegram's nesting rules: code and pre contain nothing and sit inside nothing but a quote (so `**a
 * `b`**` keeps its code and loses the bold around it), and a link contains no link.
 */
function allowedNesting(tags: readonly Tag[]): readonly Tag[] {
  const code = tags.find((t) => t.name === "code" || t.name === "pre" || t.name === "pre-code");
  if (code) return tags.filter((t) => t === code || t.name === "blockquote");
  const link = tags.findIndex((t) => t.name === "a");
  return link < 0 ? tags : tags.filter((t, i) => t.name !== "a" || i === link);
}

function sameTag(a: Tag, b: Tag): boolean {
  return a.name === b.name && JSON.stringify(a) === JSON.stringify(b);
}

function openTag(tag: Tag): string {
  if (tag.name === "a") return `<a href="${escapeHtml(tag.href, true)}">`;
  if (tag.name === "pre-code") return `<pre><code class="language-${tag.language}">`;
  return `<${tag.name}>`;
}

function closeTag(tag: Tag): string {
  return tag.name === "pre-code" ? "</code></pre>" : `</${tag.name}>`;
}

/** Telegram's HTML needs `<`, `>` and `&` escaped in text, and `"` too inside an attribute. */
function escapeHtml(text: string, attribute = false): string {
  return text.replace(attribute ? /[&<>"]/g : /[&<>]/g, (ch) =>
    ch === "&" ? "&amp;" : ch === "<" ? "&lt;" : ch === ">" ? "&gt;" : "&quot;",
  );
}
