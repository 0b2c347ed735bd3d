// Guards the assistant's Markdown in the web chat, in Debian's Chromium against `npm start` with the
// stand-in model: GFM rendered (bold, lists, a table, fenced code with a keyboard-usable Copy button, links
// in a new tab without an opener), half-written Markdown healed mid-stream, the model's HTML shown as text
// and never run, no remote image loaded, and nothing wider than a 375 px phone.
import type { Locator, Page, WebSocketRoute } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { fitsWidth, openPage, PHONE, screenshots, signInAsDeveloper, startSession, type Session } from "./harness";

const standIn = inject("standInUrl");
let session: Session;

beforeAll(async () => {
  session = await startSession({ AI_PROVIDER: "openai-compatible", AI_BASE_URL: `${standIn}/v1`, AI_MODEL: "stand-in" });
}, 120_000);
afterAll(() => session?.stop());

const CODE = 'const books = ["Dune", "Anathem"]; // a line longer than a phone is wide, so it scrolls inside its own block';

/** What the stand-in model answers ("Reply with:" in tests/setup/stand-ins.ts), streamed word by word. */
const REPLY = [
  "Here is **what you asked for**, in a list:",
  "",
  "- a *first* item with `inline code`",
  "- a second item",
  "",
  "| Book | Author | Published | Pages | Where I read it | What I thought of it |",
  "| --- | --- | --- | ---: | --- | --- |",
  "| Dune | Frank Herbert | 1965 | 412 | On the train to Lisbon, mostly | Slow to start, then impossible to put down |",
  "| Anathem | Neal Stephenson | 2008 | 937 | At home | Long, strange and wonderful |",
  "",
  "```ts",
  CODE,
  "```",
  "",
  "Read more in [the docs](https://example.com/docs), not [this one](javascript:alert(1)) nor ![a pixel](https://example.com/pixel.png).",
  "",
  `Raw HTML stays text: <img src=x onerror="document.title='pwned'"> and <b>not bold</b>`,
  "",
  '<script>document.title = "pwned"</script>',
].join("\n");

/** The text a socket frame from the agent adds to the streamed reply ("" for any other frame). */
function deltaOf(frame: string | Buffer): string {
  try {
    const message = JSON.parse(String(frame)) as { type?: string; body?: string };
    if (message.type !== "cf_agent_use_chat_response" || !message.body) return "";
    const chunk = JSON.parse(message.body) as { type?: string; delta?: string };
    return chunk.type === "text-delta" ? (chunk.delta ?? "") : "";
  } catch {
    return "";
  }
}

/**
 * Stands between the page and the agent's socket: passes every frame, but once the streamed text contains
 * a marker it keeps the agent's next frames until released, so the page sits on a half-written reply.
 */
class StreamGate {
  private text = "";
  /** Frames kept back, each with the page's side of the socket it came for. */
  private held: Array<[WebSocketRoute, string | Buffer]> | null = null;
  private waiting: { marker: string; reached: () => void } | null = null;

  async install(page: Page): Promise<void> {
    await page.routeWebSocket(/\/api\/agent/, (ws) => {
      const server = ws.connectToServer();
      ws.onMessage((frame) => server.send(frame));
      server.onMessage((frame) => this.pass(ws, frame));
    });
  }

  /** Resolves once the page has been given the reply up to `marker`, and nothing after it. */
  holdAt(marker: string): Promise<void> {
    return new Promise((reached) => (this.waiting = { marker, reached }));
  }

  release(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const [socket, frame] of held) this.pass(socket, frame);
  }

  private pass(socket: WebSocketRoute, frame: string | Buffer): void {
    if (this.held) return void this.held.push([socket, frame]);
    socket.send(frame);
    this.text += deltaOf(frame);
    if (this.waiting && this.text.includes(this.waiting.marker)) {
      this.held = [];
      this.waiting.reached();
      this.waiting = null;
    }
  }
}

// In the page: scripts as strings or casts, since the Node tsconfig has no DOM types.
const inPage = <T>(page: Page, script: string) => page.evaluate<T>(script);
const isFocused = (element: Locator) =>
  element.evaluate((el) => (el as unknown as { ownerDocument: { activeElement: unknown } }).ownerDocument.activeElement === el);
const scrollsSideways = (element: Locator) =>
  element.evaluate((el) => {
    const box = el as unknown as { scrollWidth: number; clientWidth: number };
    return box.scrollWidth > box.clientWidth;
  });

describe("the assistant's Markdown in the chat", () => {
  it("renders GFM safely, heals it mid-stream, copies code from the keyboard and fits a phone", async () => {
    const { page, problems } = await openPage(session.browser);
    await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: session.app.url });
    const gate = new StreamGate();
    await gate.install(page);
    await signInAsDeveloper(page, session.app.url);

    // Mid-stream, bold still open: it shows bold, without the asterisks.
    const boldOpen = gate.holdAt("**what you ");
    await page.getByRole("textbox", { name: "Message" }).fill(`Reply with:\n${REPLY}`);
    await page.keyboard.press("Enter");
    await boldOpen;
    const reply = page.getByRole("article", { name: "From Soma" }).last();
    await expect.poll(() => reply.locator("strong").allInnerTexts(), { timeout: 15_000 }).toEqual(["what you"]);
    expect(await reply.innerText()).not.toContain("*");
    await screenshots(page, "chat-markdown-streaming-bold");

    // Mid-stream inside the code fence: already a code block, with its language, and no backticks.
    const fenceOpen = gate.holdAt('const books = ["Dune",');
    gate.release();
    await fenceOpen;
    await expect.poll(async () => (await reply.locator("pre code").innerText()).trim(), { timeout: 15_000 }).toBe('const books = ["Dune",');
    expect(await reply.locator(".code-language").innerText()).toBe("ts");
    expect(await reply.innerText()).not.toContain("`");
    expect(await reply.locator("table").count()).toBe(1);
    await screenshots(page, "chat-markdown-streaming-code");

    gate.release();
    await expect.poll(() => reply.innerText(), { timeout: 15_000 }).toContain('<script>document.title = "pwned"</script>');

    // GFM: bold and italic, a list, a table with a header and an aligned column, inline and fenced code.
    expect(await reply.locator("strong").allInnerTexts()).toEqual(["what you asked for"]);
    expect(await reply.locator("em").allInnerTexts()).toEqual(["first"]);
    expect(await reply.locator("li").allInnerTexts()).toEqual(["a first item with inline code", "a second item"]);
    expect(await reply.locator("th").allInnerTexts()).toEqual([
      "Book",
      "Author",
      "Published",
      "Pages",
      "Where I read it",
      "What I thought of it",
    ]);
    expect(await reply.locator("td").count()).toBe(12);
    expect(await reply.locator("li code").innerText()).toBe("inline code");
    expect((await reply.locator("pre code").innerText()).trim()).toBe(CODE);

    // Links open in a new tab without an opener; a javascript: link keeps its words and loses its target.
    const docs = reply.getByRole("link", { name: "the docs" });
    expect(await docs.getAttribute("href")).toBe("https://example.com/docs");
    expect(await docs.getAttribute("target")).toBe("_blank");
    expect(await docs.getAttribute("rel")).toBe("noopener noreferrer");
    expect(await reply.getByText("this one").count()).toBe(1);
    expect(await reply.getByRole("link", { name: "this one" }).count()).toBe(0);
    expect(await inPage<number>(page, `document.querySelectorAll('a[href^="javascript"]').length`)).toBe(0);
    // An image is not loaded: it is a link to open on purpose, named by its alt text.
    const pixel = reply.getByRole("link", { name: "Image: a pixel" });
    expect(await pixel.getAttribute("href")).toBe("https://example.com/pixel.png");
    expect(await pixel.getAttribute("rel")).toBe("noopener noreferrer");

    // The model's HTML is text on the screen, never an element, and never ran.
    const text = await reply.innerText();
    expect(text).toContain(`Raw HTML stays text: <img src=x onerror="document.title='pwned'"> and <b>not bold</b>`);
    expect(await inPage<number>(page, "document.querySelectorAll('.messages img, .messages script, .messages b').length")).toBe(0);
    expect(await page.title()).toBe("Soma");
    // The person's own message stays exactly as typed, Markdown characters and all.
    const mine = page.getByRole("article", { name: "From you" }).last();
    expect(await mine.innerText()).toContain("Here is **what you asked for**, in a list:\n\n- a *first* item");
    expect(await mine.locator("strong, li, table, pre").count()).toBe(0);

    // Keyboard only: Tab from the reply's text reaches the Copy button; Enter copies the code.
    await reply.getByText("Here is").click();
    const copy = reply.getByRole("button", { name: "Copy ts code" });
    for (let presses = 0; presses < 6 && !(await isFocused(copy)); presses++) {
      await page.keyboard.press("Tab");
    }
    expect(await isFocused(copy)).toBe(true);
    await page.keyboard.press("Enter");
    const copied = reply.getByRole("button", { name: "Copied" });
    await expect.poll(() => copied.count(), { timeout: 5_000 }).toBe(1);
    expect(await inPage<string>(page, "navigator.clipboard.readText()")).toBe(CODE);
    await screenshots(page, "chat-markdown-copied");
    await expect.poll(() => copy.count(), { timeout: 5_000 }).toBe(1);

    // At phone width the wide table and the long code line scroll inside their own boxes, not the page.
    await page.setViewportSize(PHONE);
    expect(await fitsWidth(page)).toBe(true);
    expect(await inPage<boolean>(page, "document.scrollingElement.scrollWidth <= document.scrollingElement.clientWidth")).toBe(true);
    for (const box of [".table-scroll", ".code-block pre"]) {
      expect(await scrollsSideways(reply.locator(box)), box).toBe(true);
    }
    await screenshots(page, "chat-markdown-final");
    expect(problems).toEqual([]);
  });
});
