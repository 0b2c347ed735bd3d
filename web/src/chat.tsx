// Chat with the person's agent over WebSocket (/api/agent: the Worker picks the agent from the
// session). Replies stream in; memory tool calls show as "remembered: Dune · book".
import { useAgentChat } from "@cloudflare/ai-chat/react";
import { useAgent } from "agents/react";
import { useEffect, useRef, useState, type FormEvent } from "react";

interface ToolPart {
  type: string;
  state?: string;
  input?: { type?: string; name?: string; query?: string };
  output?: unknown;
}

function activityOf(part: ToolPart): string | null {
  if (part.state !== "output-available") return null;
  if (part.type === "tool-memory_capture") return `remembered: ${part.input?.name} · ${part.input?.type}`;
  if (part.type === "tool-memory_recall") return `recalled ${Array.isArray(part.output) ? part.output.length : 0} for “${part.input?.query}”`;
  if (part.type === "tool-memory_forget") return "forgot a memory";
  if (part.type === "tool-memory_update") return "updated a memory";
  if (part.type === "tool-schedule_create") return "scheduled a reminder";
  return null;
}

export function ChatPage() {
  const agent = useAgent({ agent: "UserAgent", basePath: "api/agent" });
  const { messages, sendMessage, status, error } = useAgentChat({ agent });
  const [draft, setDraft] = useState("");
  const end = useRef<HTMLDivElement>(null);
  useEffect(() => {
    // Braces matter: newer browsers return a promise from scrollIntoView, and React treats an
    // effect's return value as its cleanup.
    void end.current?.scrollIntoView({ behavior: "smooth" });
  }, [messages]);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const text = draft.trim();
    if (!text) return;
    void sendMessage({ text });
    setDraft("");
  };

  return (
    <section className="chat">
      <div className="messages" aria-live="polite">
        {messages.length === 0 && <p className="muted">Tell me something you read, watched or visited — or ask what you told me.</p>}
        {messages.map((message) => (
          <div key={message.id} className={`message ${message.role}`} data-role={message.role}>
            {message.parts.map((part, index) => {
              if (part.type === "text") return <p key={index}>{part.text}</p>;
              const activity = activityOf(part as ToolPart);
              return activity ? (
                <span key={index} className="activity" data-testid="memory-activity">
                  {activity}
                </span>
              ) : null;
            })}
          </div>
        ))}
        <div ref={end} />
      </div>
      {/* A refused message (over the limit, too long) comes back as the turn's error, with the notice. */}
      {error && status !== "submitted" && status !== "streaming" && (
        <p className="notice" role="alert">
          {error.message}
        </p>
      )}
      <form className="composer" onSubmit={submit}>
        <input
          aria-label="Message"
          placeholder="I just finished reading…"
          value={draft}
          onChange={(event) => setDraft(event.target.value)}
          autoFocus
        />
        <button type="submit" disabled={status === "streaming" || status === "submitted"}>
          Send
        </button>
      </form>
    </section>
  );
}
