// The Worker entry: the Hono app for HTTP behind the OAuth provider of the MCP server (worker/mcp/oauth.ts:
// it answers its own endpoints and guards /mcp, and hands every other request to the app as it came),
// the hourly upkeep of the provider's storage (worker/mcp/upkeep.ts), and the Durable Object classes it binds.
import { logJson } from "../platform/log";
import { createApp } from "./app";
import { withOAuth } from "./mcp/oauth";
import { oauthUpkeep } from "./mcp/upkeep";

export { UserAgent } from "../agents/user-agent";
export { DeadLetters } from "../agents/dead-letters";

const http = withOAuth(createApp());

export default {
  fetch: http.fetch,
  async scheduled(_controller: ScheduledController, env: Env) {
    const result = await oauthUpkeep(env);
    logJson("info", { upkeep: "oauth", ...result.purge, clientsChecked: result.clientsChecked, clientsDeleted: result.clientsDeleted });
  },
} satisfies ExportedHandler<Env>;
