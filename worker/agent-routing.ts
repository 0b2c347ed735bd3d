// The one place that maps a person to their agent. The name is always users.id taken from a verified
// identity (a session, a Telegram sender resolved on the server); no request parameter can choose it.
import { getAgentByName } from "agents";
import type { LocalEvent } from "../agents/local-runs";
import type { UserAgent } from "../agents/user-agent";

/** The Durable Object stub of `userId`'s agent. */
export function agentFor(env: Env, userId: string): Promise<DurableObjectStub<UserAgent>> {
  return getAgentByName(env.UserAgent, userId);
}

/** A delivery handed to the person's agent to run at its time (dev mode without a dev server: agents/local-runs.ts). */
export function runInAgent(env: Env, userId: string): (event: LocalEvent) => Promise<void> {
  return async (event) => (await agentFor(env, userId)).runHere(event);
}
