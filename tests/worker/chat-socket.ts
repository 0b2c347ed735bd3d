// A web client of the agent's chat protocol (GET /api/agent upgraded to a WebSocket), as the tests
// drive it: open a socket with a session, send chat requests, read the frames that come back.
import { expect } from "vitest";
import { call } from "./helpers";

interface Frame {
  type: string;
  id?: string;
  body?: string;
  done?: boolean;
  error?: boolean;
}

export interface ChatSocket {
  socket: WebSocket;
  frames: Frame[];
  /** Sends one chat request carrying `messages` (the client's view); returns its request id. */
  send(messages: unknown[], extra?: Record<string, unknown>): string;
  /** The final frame of request `id`. */
  end(id: string): Promise<Frame>;
  /** The text the agent streamed for request `id`. */
  text(id: string): string;
}

export async function openSocket(cookie: string): Promise<ChatSocket> {
  const response = await call("/api/agent", { headers: { upgrade: "websocket", cookie } });
  expect(response.status).toBe(101);
  const socket = response.webSocket!;
  socket.accept();
  const frames: Frame[] = [];
  socket.addEventListener("message", (event) => frames.push(JSON.parse(String(event.data)) as Frame));
  const ofRequest = (id: string) => frames.filter((f) => f.type === "cf_agent_use_chat_response" && f.id === id);
  return {
    socket,
    frames,
    send(messages, extra = {}) {
      const id = crypto.randomUUID();
      socket.send(
        JSON.stringify({ type: "cf_agent_use_chat_request", id, init: { method: "POST", body: JSON.stringify({ messages, ...extra }) } }),
      );
      return id;
    },
    end: (id) => until(() => ofRequest(id).find((f) => f.done)),
    text: (id) =>
      ofRequest(id)
        .filter((f) => f.body && !f.error)
        .map((f) => JSON.parse(f.body!) as { type: string; delta?: string })
        .filter((c) => c.type === "text-delta")
        .map((c) => c.delta)
        .join(""),
  };
}

/** A user message as the AI SDK's useChat sends it. */
export function said(text: string, id: string = crypto.randomUUID()) {
  return { id, role: "user", parts: [{ type: "text", text }] };
}

async function until<T>(check: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error("timed out waiting for the agent");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
