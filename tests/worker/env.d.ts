// Bindings that exist only in the test pool (vitest.config.ts).
declare namespace Cloudflare {
  interface Env {
    HANGING_DATABASE_URL: string;
    STAND_IN_URL: string;
    TELEGRAM_BOT_TOKEN: string;
    TELEGRAM_WEBHOOK_SECRET: string;
    TOKEN_ENCRYPTION_KEY: string;
    MAIL_PUSH_TOKEN: string;
    PUBSUB_PUSH_AUDIENCE: string;
    PUBSUB_PUSH_SERVICE_ACCOUNT: string;
    INNGEST_SIGNING_KEY: string;
  }
}
