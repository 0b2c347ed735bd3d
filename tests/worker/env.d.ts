// Bindings that exist only in the test pool (vitest.config.ts).
declare namespace Cloudflare {
  interface Env {
    HANGING_DATABASE_URL: string;
  }
}
