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
// Since wrangler 4.1xx the generated global Env no longer extends Cloudflare.Env; the pool's `env`
// (cloudflare:workers) is Cloudflare.Env, so the Worker's Env must be the same type in the tests.
interface Env extends Cloudflare.Env {}
