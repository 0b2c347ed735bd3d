// MCP apps a person disconnected in Settings (worker/mcp/apps.ts), noted in their agent's own storage.
// Disconnecting deletes the grant and its tokens from KV, but KV reads are cached at the edge for about
// a minute, so a token could still be accepted where the call lands; the /mcp route asks the agent
// instead (worker/mcp/server.ts), which answers at once and everywhere. A note outlives the longest a
// cached token could be served (KV's cache, well within an access token's hour) and is then dropped.
const PREFIX = "soma_app_disconnected:";
const REMEMBERED_MS = 2 * 60 * 60 * 1000;

/** Notes `grantId` as disconnected, dropping notes old enough to be needed no more. */
export async function noteDisconnected(storage: DurableObjectStorage, grantId: string): Promise<void> {
  const now = Date.now();
  const notes = await storage.list<number>({ prefix: PREFIX });
  const stale = [...notes].filter(([, at]) => at < now - REMEMBERED_MS).map(([key]) => key);
  if (stale.length > 0) await storage.delete(stale);
  await storage.put(`${PREFIX}${grantId}`, now);
}

/** True when `grantId` was disconnected. */
export async function isDisconnected(storage: DurableObjectStorage, grantId: string): Promise<boolean> {
  return (await storage.get(`${PREFIX}${grantId}`)) !== undefined;
}
