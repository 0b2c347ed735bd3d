// The one conversation, whatever channel each message came through (/api/agent: the Worker picks the
// agent from the session). Replies stream in; memory work shows as chips that open the memory. A
// refused message and a dropped connection are said plainly; the socket reconnects by itself. A person's
// message shows how it came (a voice note, a photo, a forward); the composer is composer.tsx.
import { useAgentChat } from "@cloudflare/ai-chat/react";
import type { FileUIPart, UIMessage } from "ai";
import { useAgent } from "agents/react";
import { type ComponentType, lazy, type ReactNode, Suspense, useEffect, useRef, useState } from "react";
import { AwayNotice } from "./away";
import { Composer } from "./composer";
import { activityOf, bodyTextOf, channelKindOf, type Mark, type MessageMetadata, marksOf } from "./chat-parts";
import { channelName, formatFull, formatWhen } from "./format";
import { Link } from "./router";

type Connection = "connecting" | "open" | "lost";

/** Text exactly as it was typed: a person's own messages, and a reply until the Markdown renderer is here. */
function TypedText({ text }: { text: string }): ReactNode {
  return <p className="typed">{text}</p>;
}

// The Markdown renderer is a chunk of its own (react-markdown and its parser would put the chat page's
// first load over its budget, ops/web-bundle.ts). It is fetched as soon as the chat page is, alongside the
// socket's history, so it is normally there before the first reply; until then, and for good if the chunk
// cannot be fetched, a reply shows as plain text rather than not at all.
const loadMarkdown = () => import("./markdown");
void loadMarkdown().catch(() => {});
const Markdown = lazy<ComponentType<{ text: string; streaming: boolean }>>(() =>
  loadMarkdown().then(
    (m) => ({ default: m.Markdown }),
    () => ({ default: TypedText }),
  ),
);

/**
 * When each message was first seen here. Messages already in the history at the first render keep
 * their stored time (metadata.at) or none; messages that arrive while the page is open are stamped
 * on arrival, which is when they happened give or take the stream.
 */
function useArrivalTimes(messages: readonly UIMessage[]): Map<string, string> {
  const times = useRef<Map<string, string> | null>(null);
  if (times.current === null) times.current = new Map(messages.map((m) => [m.id, ""]));
  for (const message of messages) if (!times.current.has(message.id)) times.current.set(message.id, new Date().toISOString());
  return times.current;
}

/** One text part: a person's words as they typed them (Markdown characters included), the assistant's as Markdown. */
function TextPart({ text, mine, streaming }: { text: string; mine: boolean; streaming: boolean }): ReactNode {
  if (mine) return <TypedText text={text} />;
  return (
    <Suspense fallback={<TypedText text={text} />}>
      <Markdown text={text} streaming={streaming} />
    </Suspense>
  );
}

function MessageLabel({ who, channel, at, timeZone }: { who: string; channel: string | null; at: string | null; timeZone: string }) {
  return (
    <p className="message-meta">
      {who}
      {channel && <> · {channelName(channel)}</>}
      {at && (
        <>
          {" · "}
          <time dateTime={at} title={formatFull(at, timeZone)}>
            {formatWhen(at, timeZone)}
          </time>
        </>
      )}
    </p>
  );
}

/** How a person's message came: a voice note, a photo, a forward. The words are read out; the icon is not. */
function Marks({ marks }: { marks: Mark[] }): ReactNode {
  if (marks.length === 0) return null;
  return (
    <p className="marks">
      {marks.map((mark) => (
        <span key={mark.kind} className={`mark ${mark.kind}`} data-testid="message-mark" title={mark.detail}>
          <span aria-hidden="true">{mark.icon}</span> {mark.text}
        </span>
      ))}
    </p>
  );
}

/** An image still in the conversation (only until its turn is answered): shown small, from its own bytes. */
function ImagePart({ url, mediaType }: { url: string; mediaType: string }): ReactNode {
  // Only the image's own bytes: a URL from elsewhere would be a request the page makes on a message's say.
  if (!url.startsWith("data:image/") || !mediaType.startsWith("image/")) return null;
  return <img className="message-image" src={url} alt="Sent with this message" />;
}

function Message({
  messages,
  index,
  arrived,
  timeZone,
  streaming,
}: {
  messages: readonly UIMessage[];
  index: number;
  arrived: Map<string, string>;
  timeZone: string;
  /** The reply is still arriving: its text parts may end half-written. */
  streaming: boolean;
}) {
  const message = messages[index]!;
  const metadata = message.metadata as MessageMetadata | undefined;
  // A person's message without metadata is one this browser sent (the web channel) until the agent's copy arrives.
  const channel = channelKindOf(messages, index, (m) => (arrived.get(m.id) ? "web" : null));
  const at = metadata?.at ?? metadata?.imported?.exportedAt ?? (arrived.get(message.id) || null);
  return (
    <article className={`message ${message.role}`} data-role={message.role} aria-label={message.role === "user" ? "From you" : "From Soma"}>
      <MessageLabel who={message.role === "user" ? "You" : "Soma"} channel={channel} at={at} timeZone={timeZone} />
      {message.role === "user" && <Marks marks={marksOf(message)} />}
      {message.parts.map((part, i) => {
        if (part.type === "text") {
          const text = bodyTextOf(message, part.text);
          if (!text) return null;
          // biome-ignore lint/suspicious/noArrayIndexKey: text parts have no id; a message's parts only grow at the end, so the index is stable.
          return <TextPart key={i} text={text} mine={message.role === "user"} streaming={streaming && part.state !== "done"} />;
        }
        // biome-ignore lint/suspicious/noArrayIndexKey: as for text parts.
        if (part.type === "file") return <ImagePart key={i} url={part.url} mediaType={part.mediaType} />;
        const activity = activityOf(part);
        if (!activity || !("toolCallId" in part)) return null;
        return activity.to ? (
          <Link key={part.toolCallId} to={activity.to} className="chip" data-testid="memory-activity">
            {activity.label}
          </Link>
        ) : (
          <span key={part.toolCallId} className="chip" data-testid="memory-activity">
            {activity.label}
          </span>
        );
      })}
    </article>
  );
}

export function ChatPage({ timeZone, examples }: { timeZone: string; examples: readonly string[] }) {
  const [connection, setConnection] = useState<Connection>("connecting");
  const agent = useAgent({
    agent: "UserAgent",
    basePath: "api/agent",
    onOpen: () => setConnection("open"),
    onClose: () => setConnection("lost"),
  });
  // isStreaming also covers a reply streaming from the server to a turn this page did not start (Telegram).
  const { messages, sendMessage, status, error, isStreaming } = useAgentChat({ agent });
  const arrived = useArrivalTimes(messages);
  const end = useRef<HTMLDivElement>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the effect scrolls to the end each time the messages change.
  useEffect(() => {
    // Braces matter: newer browsers return a promise from scrollIntoView, and React treats an
    // effect's return value as its cleanup.
    void end.current?.scrollIntoView({ block: "end" });
  }, [messages]);

  const busy = status === "submitted" || status === "streaming";
  const send = (text: string, image: FileUIPart | null) => {
    void sendMessage(!image ? { text } : text ? { text, files: [image] } : { files: [image] });
  };

  return (
    <section className="chat" aria-label="Chat">
      {connection === "lost" && (
        <div className="notice connection" role="alert">
          <span>Connection lost. Reconnecting…</span>
          <button type="button" className="secondary" onClick={() => agent.reconnect()}>
            Reconnect now
          </button>
        </div>
      )}
      <AwayNotice timeZone={timeZone} />
      <div className="messages" role="log" aria-label="Conversation" aria-live="polite">
        {messages.length === 0 && (
          <div className="empty">
            <p className="muted">
              Tell me something you read, watched or visited — or ask what you told me. Messages you send me on Telegram show up here too.
            </p>
            {examples.length > 0 && (
              <ul className="examples" aria-label="Things to try">
                {examples.map((example) => (
                  <li key={example}>
                    <button type="button" className="secondary example" disabled={busy} onClick={() => send(example, null)}>
                      {example}
                    </button>
                  </li>
                ))}
              </ul>
            )}
          </div>
        )}
        {messages.map((message, index) => (
          <Message
            key={message.id}
            messages={messages}
            index={index}
            arrived={arrived}
            timeZone={timeZone}
            streaming={(isStreaming || status === "submitted") && index === messages.length - 1 && message.role === "assistant"}
          />
        ))}
        {status === "submitted" && (
          <p className="muted typing" role="status">
            Soma is thinking…
          </p>
        )}
        <div ref={end} />
      </div>
      {/* A refused message (over the limit, too long) comes back as the turn's error, with the notice. */}
      {error && !busy && (
        <p className="notice" role="alert">
          {error.message}
        </p>
      )}
      <Composer busy={busy} connecting={connection === "connecting"} send={send} />
    </section>
  );
}
