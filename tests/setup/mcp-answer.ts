// A tool's answer as an MCP client receives it (content parts), read the same way by the Workers-pool
// tests of the MCP server and the Node tests that drive it through npm start.

/** A tool's text answer, parsed as JSON when it is JSON. */
export function toolAnswer(result: unknown): { text: string; json: unknown; isError: boolean } {
  const r = result as { content?: Array<{ type: string; text?: string }>; isError?: boolean };
  const text = r.content?.find((c) => c.type === "text")?.text ?? "";
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    // a refusal's plain sentence
  }
  return { text, json, isError: r.isError === true };
}
