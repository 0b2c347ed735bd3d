// Configuration read from the Worker's env once per isolate and validated with zod, so a missing or
// malformed value is named at the edge instead of surfacing as an `undefined` deep inside a handler.
import { z } from "zod";

/** Default for IMPORT_MODEL_CALLS_PER_DAY: two a message, so a day reads 2,000 of the person's messages. */
export const DEFAULT_IMPORT_MODEL_CALLS_PER_DAY = 4_000;

/** Default for INBOX_RETRY_WINDOW_SECONDS: how long an outage is waited out before the apology. */
const DEFAULT_RETRY_WINDOW_SECONDS = 30 * 60;

const optional = z.string().trim().min(1).optional();

/** Secrets a production deployment cannot serve its channels without. The rest are optional sinks. */
const REQUIRED_IN_PRODUCTION = [
  "APP_BASE_URL",
  "SESSION_SECRET",
  "TOKEN_ENCRYPTION_KEY",
  "TELEGRAM_BOT_TOKEN",
  "TELEGRAM_WEBHOOK_SECRET",
  "MAIL_PUSH_TOKEN",
  "INNGEST_SIGNING_KEY",
] as const;

/** TOKEN_ENCRYPTION_KEY: the AES-256 key sealing OAuth tokens, so exactly 32 bytes in base64. */
const aes256Key = z
  .string()
  .trim()
  .refine((value) => {
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value) || value.length % 4 !== 0) return false;
    return atob(value).length === 32;
  }, "must be 32 random bytes in base64 (e.g. `openssl rand -base64 32`)")
  .optional();

const ConfigFields = z.object({
  ENVIRONMENT: z.enum(["production", "development", "test"]).default("production"),
  AI_PROVIDER: z.enum(["workers-ai", "openai-compatible", "offline"]).default("workers-ai"),
  AI_MODEL: optional,
  AI_BASE_URL: z.url().optional(),
  AI_API_KEY: optional,
  /** Speech to text for voice notes: Workers AI's Whisper by default; "whisper-1" for an OpenAI-style server. */
  AI_TRANSCRIPTION_MODEL: optional,
  /** Whether the chat model sees images: "auto" knows Workers AI's vision models; set "on" for another vision model. */
  AI_VISION: z.enum(["auto", "on", "off"]).default("auto"),
  /** The longest voice note or audio transcribed (Telegram allows hours; a person's note is minutes). */
  VOICE_MAX_SECONDS: z.coerce.number().int().positive().max(3600).default(600),
  EMBEDDING_PROVIDER: z.enum(["workers-ai", "openai-compatible", "local"]).default("workers-ai"),
  EMBEDDING_MODEL: optional,
  TELEGRAM_API_ROOT: z.url().default("https://api.telegram.org"),
  /** Telegram messages a person may send per minute before the agent answers with a notice (load tests raise it). */
  TELEGRAM_MESSAGES_PER_MINUTE: z.coerce.number().int().positive().default(10),
  /** Deadline of one Bot API call (grammY's own default is minutes). */
  TELEGRAM_API_TIMEOUT_SECONDS: z.coerce.number().positive().max(60).default(10),
  /** Model calls a person's imports from other assistants may make in a day (agents/conversation-import.ts). */
  IMPORT_MODEL_CALLS_PER_DAY: z.coerce.number().int().positive().default(DEFAULT_IMPORT_MODEL_CALLS_PER_DAY),
  /** How long the inbox waits out an outage (Postgres, the model, the Bot API) before apologising. */
  INBOX_RETRY_WINDOW_SECONDS: z.coerce.number().int().positive().default(DEFAULT_RETRY_WINDOW_SECONDS),

  APP_BASE_URL: z.url().optional(),
  SESSION_SECRET: optional,
  TOKEN_ENCRYPTION_KEY: aes256Key,
  TELEGRAM_BOT_TOKEN: optional,
  TELEGRAM_WEBHOOK_SECRET: optional,
  TELEGRAM_BOT_USERNAME: optional,
  MAIL_PUSH_TOKEN: optional,
  GOOGLE_CLIENT_ID: optional,
  GOOGLE_CLIENT_SECRET: optional,
  GMAIL_PUBSUB_TOPIC: optional,
  GOOGLE_AUTH_URL: z.url().default("https://accounts.google.com/o/oauth2/v2/auth"),
  GOOGLE_TOKEN_URL: z.url().default("https://oauth2.googleapis.com/token"),
  INNGEST_EVENT_KEY: optional,
  INNGEST_SIGNING_KEY: optional,
  /** The previous signing key, accepted besides INNGEST_SIGNING_KEY while a key rotation is under way. */
  INNGEST_SIGNING_KEY_FALLBACK: optional,
  /** The Inngest API (Inngest Cloud when unset; a dev server or a test stand-in otherwise). */
  INNGEST_BASE_URL: z.url().optional(),
  /** Set (to 1 or a dev server URL) to talk to a local Inngest dev server, unsigned. */
  INNGEST_DEV: optional,
  /** When set, the mail intake also verifies the push's OIDC token for this audience. */
  PUBSUB_PUSH_AUDIENCE: optional,
  /** The service account the push subscription signs as (checked when PUBSUB_PUSH_AUDIENCE is set). */
  PUBSUB_PUSH_SERVICE_ACCOUNT: optional,
  GOOGLE_JWKS_URL: z.url().default("https://www.googleapis.com/oauth2/v3/certs"),
  GMAIL_API_URL: z.url().default("https://gmail.googleapis.com"),
  LANGFUSE_PUBLIC_KEY: optional,
  LANGFUSE_SECRET_KEY: optional,
  LANGFUSE_BASE_URL: z.url().optional(),
  SENTRY_DSN: optional,
  POSTHOG_API_KEY: optional,
  POSTHOG_HOST: z.url().optional(),
  // Account deletion asks the outside services to delete their copies (agents/integrations/outside-erasure.ts).
  /** Google's token revocation endpoint; default: "revoke" beside GOOGLE_TOKEN_URL. */
  GOOGLE_REVOKE_URL: z.url().optional(),
  /** A PostHog personal API key with person:write (the project key cannot delete people). */
  POSTHOG_PERSONAL_API_KEY: optional,
  /** The PostHog project whose person is deleted. */
  POSTHOG_PROJECT_ID: z.string().trim().regex(/^\w+$/, "must be a PostHog project id").optional(),
  /** PostHog's private API host; default: POSTHOG_HOST without its ".i." ingestion label. */
  POSTHOG_APP_HOST: z.url().optional(),
  AXIOM_TOKEN: optional,
  AXIOM_DATASET: optional,
  /** Axiom's API (an EU edge, or a test stand-in). */
  AXIOM_URL: z.url().optional(),
  /** Bearer token of the operator endpoints (/api/ops/*, npm run inbox:dead). */
  OPS_TOKEN: optional,
  /** Web Push (RFC 8292): the sender's P-256 key pair, base64url (npm run push:keys); push is off without it. */
  VAPID_PUBLIC_KEY: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9_-]{86,87}={0,2}$/, "must be a base64url P-256 public key (npm run push:keys)")
    .optional(),
  VAPID_PRIVATE_KEY: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9_-]{43}={0,1}$/, "must be a base64url P-256 private key (npm run push:keys)")
    .optional(),
  /** Who push services may contact about this sender (mailto: or https:); APP_BASE_URL by default. */
  VAPID_SUBJECT: z
    .string()
    .trim()
    .regex(/^(mailto:|https:\/\/)\S+$/, "must be a mailto: or https: URL")
    .optional(),
});

const ConfigSchema = ConfigFields.superRefine((config, ctx) => {
  // Without the service account any Google-signed token for the audience would pass the mail intake.
  if (config.PUBSUB_PUSH_AUDIENCE && !config.PUBSUB_PUSH_SERVICE_ACCOUNT) {
    ctx.addIssue({ code: "custom", path: ["PUBSUB_PUSH_SERVICE_ACCOUNT"], message: "is required when PUBSUB_PUSH_AUDIENCE is set" });
  }
  if (Boolean(config.VAPID_PUBLIC_KEY) !== Boolean(config.VAPID_PRIVATE_KEY)) {
    ctx.addIssue({
      code: "custom",
      path: ["VAPID_PRIVATE_KEY"],
      message: "VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY are set together (npm run push:keys)",
    });
  }
  if (config.ENVIRONMENT !== "production") return;
  for (const key of REQUIRED_IN_PRODUCTION) {
    if (!config[key]) ctx.addIssue({ code: "custom", path: [key], message: "is required in production" });
  }
}).transform((config) =>
  // Dev mode means unsigned workflow requests: production never runs in it, whatever the env says
  // (agents/workflows/client.ts then also tells the SDK so, which would otherwise read INNGEST_DEV itself).
  config.ENVIRONMENT === "production" ? { ...config, INNGEST_DEV: undefined } : config,
);

export type Config = z.infer<typeof ConfigSchema>;

/** Every configuration name the Worker reads (npm start forwards exactly these from the environment). */
export const CONFIG_KEYS: readonly string[] = ConfigFields.keyof().options;

/** Names that say a value is a credential. */
const CREDENTIAL_NAME = /(_SECRET|_TOKEN|_KEY|_DSN|_PASSWORD)(_FALLBACK)?$/;
/** Named like a credential but public by design: Langfuse's public key goes out with every trace. */
const PUBLIC_BY_DESIGN = new Set(["LANGFUSE_PUBLIC_KEY", "VAPID_PUBLIC_KEY"]);

/** Every configuration value that is a credential, derived from the names (scrubbed from whatever leaves: telemetry/scrub.ts). */
export const SECRET_CONFIG_KEYS = CONFIG_KEYS.filter(
  (key) => CREDENTIAL_NAME.test(key) && !PUBLIC_BY_DESIGN.has(key),
) as readonly (keyof Config)[];

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration: ${problems.join("; ")}`);
    this.name = "ConfigError";
  }
}

// Env objects are stable per isolate; parse each once.
const parsed = new WeakMap<object, Config>();

/** The validated configuration of this Worker; throws ConfigError naming every bad value. */
export function loadConfig(env: object): Config {
  const cached = parsed.get(env);
  if (cached) return cached;
  // Empty strings mean "not set" (an unset key in .env files arrives as "").
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => typeof value === "string" && value.trim() !== ""));
  const result = ConfigSchema.safeParse(present);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((issue) => `${issue.path.join(".")} ${issue.message}`));
  }
  parsed.set(env, result.data);
  return result.data;
}
