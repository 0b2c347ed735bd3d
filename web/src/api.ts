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

export interface Memory {
  id: string;
  type: string;
  name: string;
  properties: Record<string, unknown>;
  source: { kind: string; excerpt: string | null; at: string } | null;
}

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
  memories: (params: { type?: string; q?: string }) => {
    const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v) as Array<[string, string]>);
    return request<{ memories: Memory[] }>(`/api/memories?${query}`).then((r) => r.memories);
  },
  forget: (id: string) => request<{ archived: boolean }>(`/api/memories/${id}`, { method: "DELETE" }),
  setTimezone: (timezone: string) =>
    request<{ timezone: string }>("/api/me/timezone", { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ timezone }) }),
  deleteAccount: () => request<{ deleted: boolean }>("/api/account", { method: "DELETE" }),
};
