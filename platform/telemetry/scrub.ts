// The last check before anything leaves for a telemetry sink (PostHog, Axiom, Sentry, Langfuse, and
// the Worker's own log lines): every configured secret value, anything shaped like a Telegram bot
// token, a session cookie or a Google token, and every token-bearing path or query parameter (the
// one-time sign-in link /auth/link/<token>, ?token= of the mail intake, OAuth's code and state, the
// login nonce, the widget's hash) is replaced, wherever it sits.
import { type Config, SECRET_CONFIG_KEYS } from "../config";

const PATTERNS = [
  /\b\d{6,12}:[A-Za-z0-9_-]{20,}\b/g, // Telegram bot tokens
  /soma_session=[^;\s"]+/g, // the session cookie
  /\bya29\.[A-Za-z0-9._-]+/g, // Google access tokens
  /\b1\/\/[A-Za-z0-9._-]{10,}/g, // Google refresh tokens
];

const REDACTED = "[redacted]";

/** Paths and query parameters that carry a credential: the name stays, the value goes. */
const TOKEN_BEARING: Array<[RegExp, string]> = [
  [/(\/auth\/link\/)[^\s"'?#/\\:][^\s"'?#/\\]*/g, `$1${REDACTED}`], // not the route pattern /auth/link/:token
  [/([?&](?:token|code|state|nonce|hash|access_token|refresh_token|id_token)=)[^&\s"'#\\]+/gi, `$1${REDACTED}`],
];

/** `text` with every token-bearing path segment and query value replaced (needs no configuration). */
export function redactTokenBearing(text: string): string {
  for (const [pattern, replacement] of TOKEN_BEARING) text = text.replace(pattern, replacement);
  return text;
}

/** `value` (what a sink will store) with every secret replaced. */
export function scrubSecrets<T>(value: T, config: Config): T {
  if (value === undefined) return value;
  const secrets = SECRET_CONFIG_KEYS.map((k) => config[k]).filter((v): v is string => typeof v === "string" && v.length >= 6);
  let text = JSON.stringify(value);
  for (const secret of secrets) text = text.split(JSON.stringify(secret).slice(1, -1)).join(REDACTED);
  for (const pattern of PATTERNS) text = text.replace(pattern, REDACTED);
  return JSON.parse(redactTokenBearing(text)) as T;
}
