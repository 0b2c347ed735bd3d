// Guards the readers of other assistants' exports (issue 30), with fixtures written from the formats'
// public descriptions: ChatGPT's tree followed along its current branch (a regenerated answer and an
// edited question are not what was said), hidden, system, tool and reasoning messages left out, only
// the text of a multimodal message; Claude's chat_messages with sender and text or content parts; pasted
// saved memories; an empty export, non-ASCII, a file cut short, a conversation of assistant messages only.
import { describe, expect, it } from "vitest";
import {
  detectExport,
  ImportFormatError,
  readChatGpt,
  readClaude,
  readExportText,
  readPasted,
  summarize,
} from "../../platform/conversation-imports";

const T = 1714723200; // 2024-05-03T08:00:00Z
const node = (id: string, parent: string | null, children: string[], message: Record<string, unknown> | null) => ({
  id,
  parent,
  children,
  message,
});
const msg = (role: string, parts: unknown[], extra: Record<string, unknown> = {}, at = T) => ({
  id: `m-${Math.random()}`,
  author: { role },
  create_time: at,
  content: { content_type: "text", parts },
  ...extra,
});

/** A ChatGPT conversation with a regenerated answer and an edited question: the current branch is root → u1 → a1b → u2b → a2. */
const CHATGPT = [
  {
    title: "Trip ideas",
    create_time: T,
    update_time: T + 600,
    conversation_id: "c0ffee00-0000-4000-8000-000000000001",
    current_node: "a2",
    mapping: {
      root: node("root", null, ["sys"], null),
      sys: node("sys", "root", ["ctx"], msg("system", [""], { metadata: { is_visually_hidden_from_conversation: true } })),
      ctx: node(
        "ctx",
        "sys",
        ["u1"],
        msg("user", [], {
          content: { content_type: "user_editable_context", user_profile: "I am a vegetarian" },
          metadata: { is_visually_hidden_from_conversation: true },
        }),
      ),
      u1: node("u1", "ctx", ["a1a", "a1b"], msg("user", ["I just finished reading Piranesi. Any ideas for Lisbon?"], {}, T + 10)),
      a1a: node("a1a", "u1", [], msg("assistant", ["(the first answer, regenerated away)"], { recipient: "all" }, T + 20)),
      a1b: node(
        "a1b",
        "u1",
        ["u2a", "u2b"],
        msg("assistant", ["You might like The Name of the Wind. In Lisbon, try Alfama."], { recipient: "all" }, T + 30),
      ),
      u2a: node("u2a", "a1b", [], msg("user", ["(the question before it was edited)"], {}, T + 40)),
      u2b: node("u2b", "a1b", ["tool"], {
        ...msg(
          "user",
          [{ content_type: "image_asset_pointer", asset_pointer: "file-service://x" }, "Here is my itinerary — café at 9, Zoë joins"],
          {},
          T + 50,
        ),
        content: {
          content_type: "multimodal_text",
          parts: [
            { content_type: "image_asset_pointer", asset_pointer: "file-service://x" },
            "Here is my itinerary — café at 9, Zoë joins",
          ],
        },
      }),
      tool: node("tool", "u2b", ["think"], msg("assistant", ['{"query":"Lisbon"}'], { recipient: "browser" }, T + 55)),
      think: node("think", "tool", ["a2"], {
        ...msg("assistant", [], {}, T + 56),
        content: { content_type: "thoughts", thoughts: [{ summary: "planning" }] },
      }),
      a2: node("a2", "think", [], msg("assistant", ["Enjoy Lisbon, and say hi to Zoë!"], { recipient: "all" }, T + 60)),
    },
  },
  {
    title: "Only the assistant",
    create_time: T + 3600,
    id: "c0ffee00-0000-4000-8000-000000000002",
    current_node: "a",
    mapping: {
      root: node("root", null, ["a"], null),
      a: node("a", "root", [], msg("assistant", ["Hello! How can I help?"], {}, T + 3600)),
    },
  },
];

const CLAUDE = [
  {
    uuid: "5f1e0000-0000-4000-8000-000000000001",
    name: "Ремонт кухни",
    created_at: "2024-06-01T09:00:00.000000+00:00",
    updated_at: "2024-06-01T09:05:00.000000+00:00",
    chat_messages: [
      { uuid: "1", sender: "human", text: "Я переехал в Берлин в прошлом году", created_at: "2024-06-01T09:00:00.000000+00:00" },
      {
        uuid: "2",
        sender: "assistant",
        text: "",
        content: [
          { type: "thinking", thinking: "The person moved." },
          { type: "text", text: "Добро пожаловать в Берлин! Вам может понравиться «Пиранези»." },
          { type: "tool_use", name: "web_search", input: {} },
        ],
        created_at: "2024-06-01T09:00:10.000000+00:00",
      },
      {
        uuid: "3",
        sender: "human",
        text: "",
        content: [{ type: "text", text: "I run every Sunday 🏃" }],
        created_at: "2024-06-01T09:01:00Z",
      },
      { uuid: "4", sender: "human", text: "   ", created_at: "2024-06-01T09:02:00Z" },
    ],
  },
];

describe("ChatGPT's conversations.json", () => {
  it("follows the current branch, leaves out hidden, system, tool and reasoning messages, and keeps a multimodal message's text", () => {
    const [trip, onlyAssistant] = readChatGpt(CHATGPT);
    expect(trip).toEqual({
      origin: "chatgpt",
      id: "c0ffee00-0000-4000-8000-000000000001",
      title: "Trip ideas",
      startedAt: "2024-05-03T08:00:00.000Z",
      messages: [
        { role: "user", text: "I just finished reading Piranesi. Any ideas for Lisbon?", at: "2024-05-03T08:00:10.000Z" },
        { role: "assistant", text: "You might like The Name of the Wind. In Lisbon, try Alfama.", at: "2024-05-03T08:00:30.000Z" },
        { role: "user", text: "Here is my itinerary — café at 9, Zoë joins", at: "2024-05-03T08:00:50.000Z" },
        { role: "assistant", text: "Enjoy Lisbon, and say hi to Zoë!", at: "2024-05-03T08:01:00.000Z" },
      ],
    });
    expect(onlyAssistant?.messages).toEqual([{ role: "assistant", text: "Hello! How can I help?", at: "2024-05-03T09:00:00.000Z" }]);
    expect(summarize(readChatGpt(CHATGPT))).toEqual({
      conversations: 2,
      from: "2024-05-03T08:00:10.000Z",
      to: "2024-05-03T09:00:00.000Z",
      userMessages: 2,
    });
  });

  it("without current_node takes the branch that ends last; a cycle in the tree does not hang it", () => {
    const { current_node: _, ...withoutCurrent } = CHATGPT[0]!;
    const texts = readChatGpt([withoutCurrent])[0]!.messages.map((m) => m.text);
    expect(texts.at(-1)).toBe("Enjoy Lisbon, and say hi to Zoë!");
    const cyclic = {
      ...CHATGPT[0],
      current_node: "x",
      mapping: { x: node("x", "y", [], msg("user", ["x"])), y: node("y", "x", ["x"], msg("user", ["y"])) },
    };
    expect(readChatGpt([cyclic])[0]!.messages.map((m) => m.text)).toEqual(["y", "x"]);
  });
});

describe("Claude's conversations.json", () => {
  it("keeps the person's and the assistant's words (text parts only), in any language", () => {
    expect(readClaude(CLAUDE)).toEqual([
      {
        origin: "claude",
        id: "5f1e0000-0000-4000-8000-000000000001",
        title: "Ремонт кухни",
        startedAt: "2024-06-01T09:00:00.000Z",
        messages: [
          { role: "user", text: "Я переехал в Берлин в прошлом году", at: "2024-06-01T09:00:00.000Z" },
          { role: "assistant", text: "Добро пожаловать в Берлин! Вам может понравиться «Пиранези».", at: "2024-06-01T09:00:10.000Z" },
          { role: "user", text: "I run every Sunday 🏃", at: "2024-06-01T09:01:00.000Z" },
        ],
      },
    ]);
  });
});

describe("a conversations.json as text", () => {
  it("tells the two formats apart, takes an empty export, and says what is wrong with a cut-short or foreign file", () => {
    expect(detectExport(CHATGPT)).toBe("chatgpt");
    expect(detectExport(CLAUDE)).toBe("claude");
    expect(readExportText(JSON.stringify(CLAUDE)).origin).toBe("claude");
    expect(readExportText("[]")).toEqual({ origin: "chatgpt", conversations: [] });
    const full = JSON.stringify(CHATGPT);
    expect(() => readExportText(full.slice(0, Math.floor(full.length / 2)))).toThrow(/cut short/);
    expect(() => readExportText("hello")).toThrow(/not JSON/);
    expect(() => readExportText(JSON.stringify({ format: "soma-export" }))).toThrow(ImportFormatError);
    expect(() => readExportText(JSON.stringify([{ title: "x" }]))).toThrow(/neither ChatGPT's `mapping` nor Claude's `chat_messages`/);
  });
});

describe("pasted saved memories", () => {
  it("is one statement a line, without bullets, numbers, headings or blank lines, all the person's own", () => {
    const pasted = readPasted(
      "Saved memories\n\n- Is vegetarian\n• Has a sister named Ana\n2. Lives in Lisbon since 2021\n   \nPrefers short answers",
      new Date("2026-11-27T10:00:00Z"),
    );
    expect(pasted.origin).toBe("pasted");
    expect(pasted.messages).toEqual(
      ["Is vegetarian", "Has a sister named Ana", "Lives in Lisbon since 2021", "Prefers short answers"].map((text) => ({
        role: "user",
        text,
        at: "2026-11-27T10:00:00.000Z",
      })),
    );
    expect(() => readPasted("Memories:\n\n")).toThrow(/nothing to import/);
  });
});
