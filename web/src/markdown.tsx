// The assistant's Markdown in the web chat: GitHub-flavoured (lists, tables, fenced code with a Copy
// button, links), healed while it streams, and nothing the model writes ever becomes markup of its own.
//
// react-markdown + remark-gfm + remend rather than streamdown (which bundles these same pieces): streamdown
// brings Tailwind classes and features (math, diagrams, highlighting) this app does not use; the app has
// its own stylesheet (web/public/styles.css, `.markdown`). Its own chunk: chat.tsx loads it lazily, so the
// chat page's first load stays within the budget of ops/web-bundle.ts.
//
// Safety, decided here and nowhere else:
// - HTML the model writes is shown as text, as Telegram shows it, and never parsed: there is no rehype-raw,
//   and the remark plugin below (rewriteAnswer) turns it into text before anything later in the pipeline
//   could read it as markup (react-markdown 10 also escapes what reaches it raw, or drops it with skipHtml:
//   this keeps the rule out of those defaults, and gives an HTML block the paragraph it stood as).
// - Links keep only http(s), mailto and relative URLs (safeUrl) and open in a new tab without an opener.
// - Images are never loaded: a remote image in an answer is a tracking pixel or a way to leak the
//   conversation in its URL. Each becomes a link named by its alt text, for the person to open on purpose.
import { type ComponentProps, memo, type ReactNode, useEffect, useState } from "react";
import ReactMarkdown, { type Components, defaultUrlTransform, type ExtraProps } from "react-markdown";
import remend from "remend";
import remarkGfm from "remark-gfm";

/** The few mdast fields the plugin reads (the full types live in @types/mdast, not a dependency of ours). */
interface MdNode {
  type: string;
  value?: string;
  url?: string;
  alt?: string | null;
  children?: MdNode[];
  [key: string]: unknown;
}

/** Containers whose children are blocks: a stray text node there is wrapped in a paragraph of its own. */
const FLOW_PARENTS = new Set(["root", "blockquote", "listItem", "footnoteDefinition"]);

const imageLabel = (alt: string | null | undefined) => (alt ? `Image: ${alt}` : "Image");

/** Splits text at its newlines into text and hard breaks: each line of the model's answer stays a line. */
function withBreaks(value: string): MdNode[] {
  return value
    .split("\n")
    .flatMap((line, i) => (i === 0 ? [{ type: "text", value: line }] : [{ type: "break" }, { type: "text", value: line }]));
}

/** Rewrites `parent`'s children in place: HTML as text, images as links (or text inside a link), newlines as breaks. */
function rewriteChildren(parent: MdNode, insideLink: boolean): void {
  if (!parent.children) return;
  const flow = FLOW_PARENTS.has(parent.type);
  parent.children = parent.children.flatMap((node): MdNode[] => {
    if (node.type === "html") {
      const text = withBreaks(node.value ?? "");
      return flow ? [{ type: "paragraph", children: text }] : text;
    }
    if (node.type === "text") return withBreaks(node.value ?? "");
    if (node.type === "image" || node.type === "imageReference") {
      const label = { type: "text", value: imageLabel(node.alt) };
      if (insideLink) return [label];
      const { alt: _alt, ...rest } = node;
      return [{ ...rest, type: node.type === "image" ? "link" : "linkReference", children: [label] }];
    }
    rewriteChildren(node, insideLink || node.type === "link" || node.type === "linkReference");
    return [node];
  });
}

/**
 * The remark plugin behind the safety rules above, and GitHub's line breaks: in a comment on GitHub (and in
 * the same reply on Telegram) a single newline is a new line; in a Markdown file it would be a space.
 */
function rewriteAnswer() {
  return (tree: MdNode) => rewriteChildren(tree, false);
}

const SCHEME = /^([a-z][a-z\d+.-]*):/i;

/** http(s), mailto and relative URLs; anything else (javascript:, data:, remend's placeholders) becomes "". */
function safeUrl(url: string): string {
  const safe = defaultUrlTransform(url);
  const scheme = SCHEME.exec(safe)?.[1]?.toLowerCase();
  return scheme === undefined || scheme === "http" || scheme === "https" || scheme === "mailto" ? safe : "";
}

function MarkdownLink({ href, children, node: _node, ...props }: ComponentProps<"a"> & ExtraProps) {
  // A link whose URL was refused (or is still being written) keeps its words, without a destination.
  if (!href) return <span>{children}</span>;
  // In-page anchors (GFM footnotes) stay in the page.
  if (href.startsWith("#"))
    return (
      <a href={href} {...props}>
        {children}
      </a>
    );
  return (
    <a href={href} target="_blank" rel="noopener noreferrer" {...props}>
      {children}
    </a>
  );
}

/** The text of a hast node: what the Copy button copies. */
function textOf(node: { type: string; value?: string; children?: unknown[] } | undefined): string {
  if (!node) return "";
  if (node.type === "text") return node.value ?? "";
  return (node.children ?? []).map((child) => textOf(child as typeof node)).join("");
}

const COPIED_FOR_MS = 2000;

function CodeBlock({ children, node }: ComponentProps<"pre"> & ExtraProps) {
  const [copied, setCopied] = useState<"yes" | "failed" | null>(null);
  useEffect(() => {
    if (!copied) return;
    const timer = setTimeout(() => setCopied(null), COPIED_FOR_MS);
    return () => clearTimeout(timer);
  }, [copied]);
  const code = node?.children[0];
  const classes = code?.type === "element" ? code.properties.className : undefined;
  const language = Array.isArray(classes)
    ? classes
        .map(String)
        .find((c) => c.startsWith("language-"))
        ?.slice("language-".length)
    : undefined;
  const copy = () => {
    navigator.clipboard.writeText(textOf(code).replace(/\n$/, "")).then(
      () => setCopied("yes"),
      () => setCopied("failed"),
    );
  };
  return (
    <div className="code-block">
      <div className="code-head">
        <span className="code-language">{language ?? "code"}</span>
        {/* The visible word starts the accessible name, so a voice command "click Copy" still finds it. */}
        <button
          type="button"
          className="copy"
          aria-label={copied ? undefined : `Copy ${language ? `${language} ` : ""}code`}
          onClick={copy}
        >
          {copied === "yes" ? "Copied" : copied === "failed" ? "Copy failed" : "Copy"}
        </button>
      </div>
      <pre>{children}</pre>
    </div>
  );
}

function Table({ children, node: _node, ...props }: ComponentProps<"table"> & ExtraProps) {
  // A wide table scrolls inside its own box; the page never scrolls sideways.
  return (
    <div className="table-scroll">
      <table {...props}>{children}</table>
    </div>
  );
}

const COMPONENTS: Components = { a: MarkdownLink, pre: CodeBlock, table: Table };
const REMARK_PLUGINS = [remarkGfm, rewriteAnswer];
// Only what this app renders: no math (KaTeX), and a half-written link shows its words, not a placeholder URL.
const REMEND_OPTIONS = { katex: false, linkMode: "text-only" } as const;

/**
 * An assistant text part as formatted Markdown. `streaming`: the text is still arriving, so it is healed
 * first (an open `**`, backtick or link closed for now) and looks right at every step.
 */
export const Markdown = memo(function Markdown({ text, streaming }: { text: string; streaming: boolean }): ReactNode {
  return (
    <div className="markdown">
      <ReactMarkdown remarkPlugins={REMARK_PLUGINS} urlTransform={safeUrl} components={COMPONENTS}>
        {streaming ? remend(text, REMEND_OPTIONS) : text}
      </ReactMarkdown>
    </div>
  );
});
