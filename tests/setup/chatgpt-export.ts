// Conversations as ChatGPT's data export writes them (conversations.json: a tree of nodes, `mapping`,
// and `current_node`), for the import suites: here a straight line of turns, each the next one's parent.

const chatGptMessage = (role: string, text: string, at: number) => ({
  author: { role },
  create_time: at,
  content: { content_type: "text", parts: [text] },
});

/** A conversation of `turns` ([role, text, Unix seconds]) in order; the last one is where it ended. */
export function chatGptConversation(id: string, title: string, startedAt: number, turns: Array<[string, string, number]>) {
  const ids = turns.map((_, i) => `n${i}`);
  const mapping = Object.fromEntries(
    turns.map(([role, text, at], i) => [
      ids[i]!,
      {
        id: ids[i],
        parent: i === 0 ? null : ids[i - 1],
        children: i + 1 < ids.length ? [ids[i + 1]] : [],
        message: chatGptMessage(role, text, at),
      },
    ]),
  );
  return { title, create_time: startedAt, conversation_id: id, current_node: ids.at(-1), mapping };
}
