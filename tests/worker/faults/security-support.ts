// What the security suites (security-boundaries.test.ts, security-credentials.test.ts) share: Soma's own
// origin, and the session a response started and whom a session token signs in, read back through the
// Worker. Test code only.
import { expect } from "vitest";
import { fetchWorker } from "./support";

export const ORIGIN = "https://soma.test";

export function sessionOf(response: Response): string | undefined {
  return response.headers
    .getSetCookie()
    .find((c) => c.startsWith("__Host-soma_session="))
    ?.split(";")[0]
    ?.slice("__Host-soma_session=".length);
}

export async function whoIs(token: string): Promise<string | null> {
  const response = await fetchWorker("/api/me", { headers: { cookie: `__Host-soma_session=${token}` } });
  if (response.status === 401) return null;
  expect(response.status).toBe(200);
  return ((await response.json()) as { id: string }).id;
}
