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
  /** ISO date-times: learned at or after `from`, before `to`. */
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
  deleteAccount: () => request<{ deleted: boolean }>("/api/account", { method: "DELETE" }),
};
