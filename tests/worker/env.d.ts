// Bindings that exist only in the test pool (vitest.config.ts).
declare namespace Cloudflare {
  interface Env {
    HANGING_DATABASE_URL: string;
    STAND_IN_URL: string;
    TELEGRAM_BOT_TOKEN: string;
    TELEGRAM_WEBHOOK_SECRET: string;
    TOKEN_ENCRYPTION_KEY: string;
  }
}
