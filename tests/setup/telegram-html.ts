// Telegram's HTML parse mode, as the Bot API applies it (https://core.telegram.org/bots/api#html-style,
// and tdlib's parse_html, which the Bot API runs): the text a person sees and its entities, or the
// "can't parse entities" error the Bot API answers. The Bot API stand-in parses every formatted message
// with it, so a test sees what a person would, and a reply Telegram would refuse is refused here too.
//
// What it enforces: only Telegram's tags (b strong i em u ins s strike del span.tg-spoiler tg-spoiler a
// code pre blockquote tg-emoji); every tag closed, in order; `<` never bare; only &lt; &gt; &amp; &quot;
// and numeric entities decoded (another `&` stays as it is, as tdlib leaves it); code and pre hold no
// other entity and sit in none but a quote; a link holds no link or code; quotes do not nest; at most
// 4096 characters (UTF-16 code units) after parsing, and not empty.

export interface TelegramEntity {
  type: string;
  offset: number;
  length: number;
  url?: string;
  language?: string;
}

export class TelegramParseError extends Error {}

const TAGS: Record<string, string> = {
  b: "bold",
  strong: "bold",
  i: "italic",
  em: "italic",
  u: "underline",
  ins: "underline",
  s: "strikethrough",
  strike: "strikethrough",
  del: "strikethrough",
  "tg-spoiler": "spoiler",
  span: "spoiler",
  a: "text_link",
  code: "code",
  pre: "pre",
  blockquote: "blockquote",
  "tg-emoji": "custom_emoji",
};

/** Entity types that may contain others and be inside others (except code and pre). */
const SPANNING = new Set(["bold", "italic", "underline", "strikethrough", "spoiler"]);

const NAMED: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"' };

interface Open {
  tag: string;
  type: string;
  offset: number;
  at: number;
  url?: string;
  language?: string;
}

/** The text and entities Telegram makes of `html`, or TelegramParseError with the Bot API's description. */
export function parseTelegramHtml(html: string): { text: string; entities: TelegramEntity[] } {
  let text = "";
  const entities: TelegramEntity[] = [];
  const stack: Open[] = [];
  const fail = (message: string): never => {
    throw new TelegramParseError(`Bad Request: can't parse entities: ${message}`);
  };
  let i = 0;
  while (i < html.length) {
    const ch = html[i]!;
    if (ch === "&") {
      const entity = /^&(#x[0-9a-f]+|#\d+|[a-z]+);/i.exec(html.slice(i, i + 12));
      const decoded = entity ? decodeEntity(entity[1]!) : null;
      if (entity && decoded !== null) {
        text += decoded;
        i += entity[0].length;
      } else {
        text += "&";
        i++;
      }
      continue;
    }
    if (ch !== "<") {
      text += ch;
      i++;
      continue;
    }
    const byteOffset = new TextEncoder().encode(html.slice(0, i)).length;
    const end = html.indexOf(">", i);
    if (end < 0) fail(`Unclosed start tag at byte offset ${byteOffset}`);
    const inside = html.slice(i + 1, end);
    i = end + 1;
    if (inside.startsWith("/")) {
      const name = inside.slice(1).trim().toLowerCase();
      const open = stack.pop();
      if (!open) fail(`Unexpected end tag at byte offset ${byteOffset}`);
      if (open!.tag !== name) fail(`Unmatched end tag at byte offset ${byteOffset}, expected "</${open!.tag}>", found "</${name}>"`);
      // The <code> of <pre><code class="language-x"> only names the pre's language: no entity of its own.
      if (open!.type !== "pre-code" && text.length > open!.offset) entities.push(entityOf(open!, text.length));
      continue;
    }
    const name = /^[a-z][a-z0-9-]*/i.exec(inside)?.[0].toLowerCase() ?? "";
    const attributes = parseAttributes(inside.slice(name.length));
    const type = TAGS[name];
    if (!type || (name === "span" && attributes.class !== "tg-spoiler"))
      fail(`Unsupported start tag "${name}" at byte offset ${byteOffset}`);
    if (name === "a" && !attributes.href) fail(`Empty link URL at byte offset ${byteOffset}`);
    const open: Open = { tag: name, type: type!, offset: text.length, at: byteOffset };
    if (name === "a") open.url = attributes.href;
    if (name === "code" && stack.at(-1)?.type === "pre") {
      // <pre><code class="language-x"> is one pre entity with a language.
      const language = /^language-(.+)$/.exec(attributes.class ?? "")?.[1];
      if (language) stack.at(-1)!.language = language;
      stack.push({ ...open, type: "pre-code" });
      continue;
    }
    checkNesting(stack, open.type, fail);
    stack.push(open);
  }
  if (stack.length > 0) fail(`Can't find end tag corresponding to start tag "${stack.at(-1)!.tag}"`);
  const visible = text.trim();
  if (visible === "") throw new TelegramParseError("Bad Request: message text is empty");
  if (text.length > 4096) throw new TelegramParseError("Bad Request: message is too long");
  const lead = text.length - text.trimStart().length;
  return {
    text: visible,
    entities: entities
      .map((e) => ({ ...e, offset: e.offset - lead }))
      .filter((e) => e.offset >= 0 && e.length > 0)
      .sort((a, b) => a.offset - b.offset),
  };
}

function entityOf(open: Open, end: number): TelegramEntity {
  return {
    type: open.type,
    offset: open.offset,
    length: end - open.offset,
    ...(open.url ? { url: open.url } : {}),
    ...(open.language ? { language: open.language } : {}),
  };
}

function checkNesting(stack: Open[], type: string, fail: (message: string) => never): void {
  for (const outer of stack) {
    if (outer.type === "blockquote" && type === "blockquote") fail("Blockquote entities can't be nested");
    if (outer.type === "blockquote" || (SPANNING.has(outer.type) && SPANNING.has(type))) continue;
    if (SPANNING.has(outer.type) && type !== "code" && type !== "pre") continue;
    if (outer.type === "text_link" && SPANNING.has(type)) continue;
    fail(`Entity "${type}" can't be inside entity "${outer.type}"`);
  }
}

function parseAttributes(source: string): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const match of source.matchAll(/([a-z-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/gi)) {
    attributes[match[1]!.toLowerCase()] = decodeAll(match[2] ?? match[3] ?? match[4] ?? "");
  }
  return attributes;
}

function decodeAll(value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, body: string) => decodeEntity(body) ?? whole);
}

function decodeEntity(body: string): string | null {
  if (body.startsWith("#")) {
    const code = body[1] === "x" || body[1] === "X" ? Number.parseInt(body.slice(2), 16) : Number.parseInt(body.slice(1), 10);
    return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : null;
  }
  return NAMED[body.toLowerCase()] ?? null;
}
