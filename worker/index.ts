// The Worker entry: the Hono app for HTTP behind the OAuth provider of the MCP server (worker/mcp/oauth.ts:
// it answers its own endpoints and guards /mcp, and hands every other request to the app as it came),
// and the Durable Object classes it binds.
import { createApp } from "./app";
import { withOAuth } from "./mcp/oauth";

export { UserAgent } from "../agents/user-agent";
export { DeadLetters } from "../agents/dead-letters";

export default withOAuth(createApp()) satisfies ExportedHandler<Env>;
