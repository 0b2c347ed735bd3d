// UserAgent: one Durable Object per person, named by users.id (worker/agent-routing.ts picks it).
// It owns the person's conversation; memory lives in Postgres (db/), reached only through the
// row-level-security helper with this agent's user id.
import { AIChatAgent } from "@cloudflare/ai-chat";

export class UserAgent extends AIChatAgent<Env> {}
