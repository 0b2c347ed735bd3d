// A channel is how a message reaches Soma: Telegram (the bot) or the web (the chat page over the
// WebSocket, and POST /api/chat). Traces, product events, logs and the turn-completed event name it.
export const CHANNELS = ["telegram", "web"] as const;
export type Channel = (typeof CHANNELS)[number];
