// How times and channels read on every page, in the person's own timezone.

/** "14:05" today, "3 Feb, 14:05" this year, "3 Feb 2024, 14:05" before. */
export function formatWhen(iso: string, timeZone: string, now = new Date()): string {
  const at = new Date(iso);
  const day = (d: Date) => new Intl.DateTimeFormat("en-CA", { timeZone, year: "numeric", month: "2-digit", day: "2-digit" }).format(d);
  const time = new Intl.DateTimeFormat("en-GB", { timeZone, hour: "2-digit", minute: "2-digit" }).format(at);
  if (day(at) === day(now)) return time;
  const sameYear = day(at).slice(0, 4) === day(now).slice(0, 4);
  const date = new Intl.DateTimeFormat("en-GB", {
    timeZone,
    day: "numeric",
    month: "short",
    ...(sameYear ? {} : { year: "numeric" }),
  }).format(at);
  return `${date}, ${time}`;
}

/** A day: "3 February 2024". */
export function formatDay(iso: string, timeZone: string): string {
  return new Intl.DateTimeFormat("en-GB", { timeZone, dateStyle: "long" }).format(new Date(iso));
}

/** A date and time in full, for a tooltip or a detail page: "Saturday 3 February 2024 at 14:05". */
export function formatFull(iso: string, timeZone: string): string {
  return new Intl.DateTimeFormat("en-GB", { timeZone, dateStyle: "full", timeStyle: "short" }).format(new Date(iso));
}

const CHANNELS: Record<string, string> = {
  telegram: "Telegram",
  web: "Web",
  email: "Email",
  gmail: "Email",
  import: "Import",
  mcp: "MCP",
  chatgpt: "ChatGPT",
  claude: "Claude",
  pasted: "Pasted memories",
};

/** A source kind as the person knows the channel: "telegram" → "Telegram". */
export function channelName(kind: string): string {
  return CHANNELS[kind] ?? kind.charAt(0).toUpperCase() + kind.slice(1);
}
