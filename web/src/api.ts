// The web app's calls to the Worker. Same origin, the session cookie rides along; a 401 means the
// session ended, so the page goes back to sign-in.

export interface Me {
  id: string;
  displayName: string;
  /** IANA zone; "UTC" until the person (or their browser, on first sign-in) sets it. */
  timezone: string;
  telegram: { linked: boolean; bot: string | null };
  google: { connected: boolean; email: string | null; available: boolean };
  environment: string;
}

export interface Fact {
  id: string;
  statement: string;
  category: string;
  subject: string;
  /** 0–1: how sure Soma is (a correction by the person is 1). */
  confidence: number;
  /** "extracted" from a message, or "correction" by the person. */
  origin: string;
  /** The fact that replaced this one; null for a current fact. */
  supersededBy: string | null;
  toldAt: string;
  /** Since when it holds, where the person said so. */
  happenedAt: string | null;
  updatedAt: string;
  source: MemorySource | null;
}

/** The categories the server accepts for a correction (agents/fact-extraction.ts FACT_CATEGORIES; it answers 400 for others). */
export const FACT_CATEGORIES = ["personal", "location", "work", "relationship", "preference", "health", "habit", "goal", "general"] as const;

export type ReminderStatus = "scheduled" | "delivering" | "delivered" | "undeliverable" | "cancelled";

export interface Reminder {
  id: string;
  text: string;
  /** When it is due (UTC ISO). */
  at: string;
  status: ReminderStatus;
  createdAt: string;
}

/** What an import adds, per kind (a dry run: what it would add). */
export interface ImportCounts {
  sources: number;
  entities: number;
  facts: number;
  edges: number;
  events: number;
  messages: number;
}

export interface MemorySource {
  kind: string;
  excerpt: string | null;
  at: string;
}

export interface Memory {
  id: string;
  type: string;
  name: string;
  properties: Record<string, unknown>;
  status?: "active" | "archived";
  createdAt: string;
  /** When the person told Soma; `happenedAt` when they said when it happened. */
  toldAt: string;
  happenedAt: string | null;
  source: MemorySource | null;
}

export interface MemoryDetail {
  memory: Memory & { status: "active" | "archived"; updatedAt: string };
  relations: Array<{
    id: string;
    type: string;
    direction: "out" | "in";
    other: { id: string; type: string; name: string; status: string };
    since: string;
    until: string | null;
  }>;
  events: Array<{ id: string; kind: string; status: string; occurredAt: string; payload: Record<string, unknown> }>;
}

export interface MemoryFilter {
  q?: string;
  type?: string;
  /** ISO date-times: happened (else told) at or after `from`, before `to`. */
  from?: string;
  to?: string;
}

export interface MemoryEdit {
  name?: string;
  type?: string;
  properties?: Record<string, string>;
}

const JSON_HEADERS = { "content-type": "application/json" };

async function request<T>(path: string, init?: RequestInit): Promise<T> {
  const response = await fetch(path, { ...init, credentials: "same-origin" });
  if (response.status === 401) {
    window.location.assign("/login");
    throw new Error("signed out");
  }
  if (!response.ok) {
    const body = (await response.json().catch(() => null)) as { error?: { message?: string } } | null;
    throw new Error(body?.error?.message ?? `Request failed (${response.status})`);
  }
  return (await response.json()) as T;
}

export const api = {
  me: () => request<Me>("/api/me"),
  memories: (filter: MemoryFilter & { cursor?: string | null; limit?: number }) => {
    const query = new URLSearchParams(Object.entries(filter).filter(([, v]) => v !== undefined && v !== null && v !== "").map(([k, v]) => [k, String(v)]));
    return request<{ memories: Memory[]; nextCursor: string | null }>(`/api/memories?${query}`);
  },
  memoryTypes: () => request<{ types: Array<{ type: string; count: number }> }>("/api/memories/types").then((r) => r.types),
  memory: (id: string) => request<MemoryDetail>(`/api/memories/${encodeURIComponent(id)}`),
  editMemory: (id: string, edit: MemoryEdit) =>
    request<{ memory: MemoryDetail["memory"] }>(`/api/memories/${encodeURIComponent(id)}`, { method: "PATCH", headers: JSON_HEADERS, body: JSON.stringify(edit) }),
  forget: (id: string) => request<{ archived: boolean }>(`/api/memories/${encodeURIComponent(id)}`, { method: "DELETE" }),
  restore: (id: string) => request<{ restored: boolean }>(`/api/memories/${encodeURIComponent(id)}/restore`, { method: "POST" }),
  setTimezone: (timezone: string) =>
    request<{ timezone: string }>("/api/me/timezone", { method: "PUT", headers: JSON_HEADERS, body: JSON.stringify({ timezone }) }),
  facts: () => request<{ current: Fact[]; superseded: Fact[] }>("/api/facts"),
  correctFact: (id: string, change: { statement?: string; category?: string }) =>
    request<{ fact: Fact; replaces: string | null }>(`/api/facts/${encodeURIComponent(id)}`, { method: "PATCH", headers: JSON_HEADERS, body: JSON.stringify(change) }),
  deleteFact: (id: string) => request<{ deleted: boolean }>(`/api/facts/${encodeURIComponent(id)}`, { method: "DELETE" }),
  reminders: () => request<{ upcoming: Reminder[]; past: Reminder[] }>("/api/reminders"),
  cancelReminder: (id: string) => request<{ cancelled: boolean; reminder: Reminder }>(`/api/reminders/${encodeURIComponent(id)}`, { method: "DELETE" }),
  /** Sends an export file's text; `dryRun` answers what it would add and writes nothing. */
  importFile: (text: string, dryRun: boolean) =>
    request<{ imported: ImportCounts }>(`/api/import${dryRun ? "?dryRun=1" : ""}`, { method: "POST", headers: JSON_HEADERS, body: text }),
  deleteAccount: () => request<{ deleted: boolean }>("/api/account", { method: "DELETE" }),
};
