import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// Secrets of the test deployment (test values only); the tests read them back from the bindings.
const TEST_INNGEST = {
  eventKey: "test-event-key",
  signingKey: "signkey-test-8ee6ed2a44a1f3b5c1e6f4b5a2b0c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3",
};
const TEST_MAIL = {
  pushToken: "test-mail-push-token",
  audience: "https://soma.test/api/webhooks/mail",
  serviceAccount: "gmail-push@soma-test.iam.gserviceaccount.com",
};

// Two projects share one embedded Postgres (tests/setup/postgres.ts):
//   worker  tests run inside workerd with the real Worker, Durable Objects and bindings
//   node    tests of Node-side code: npm start, db:setup, ops commands
export default defineConfig({
  test: {
    // Two test files at a time, whatever the machine: vitest's default on 2 cores is one, and much of
    // the suite waits on real processes and deadlines (npm start restarted, a database stopped) rather
    // than the CPU. Measured on 2 cores: 772 s one at a time, 599 s two at a time.
    maxWorkers: 2,
    globalSetup: ["tests/setup/postgres.ts"],
    projects: [
      {
        plugins: [
          cloudflareTest(({ inject }) => ({
            wrangler: { configPath: "./wrangler.toml" },
            // The [ai] binding would otherwise ask for a remote session; tests use scripted models.
            remoteBindings: false,
            miniflare: {
              hyperdrives: { HYPERDRIVE: inject("workerDatabaseUrl") },
              bindings: {
                ENVIRONMENT: "test",
                AI_PROVIDER: "offline",
                EMBEDDING_PROVIDER: "local",
                HANGING_DATABASE_URL: inject("hangingDatabaseUrl"),
                STAND_IN_URL: inject("standInUrl"),
                TELEGRAM_API_ROOT: inject("standInUrl"),
                TELEGRAM_BOT_TOKEN: "123456:test-token",
                TELEGRAM_WEBHOOK_SECRET: "test-webhook-secret",
                TELEGRAM_BOT_USERNAME: "soma_test_bot",
                APP_BASE_URL: "https://soma.test",
                GOOGLE_CLIENT_ID: "google-client-id",
                GOOGLE_CLIENT_SECRET: "google-client-secret",
                GOOGLE_AUTH_URL: `${inject("standInUrl")}/google/auth`,
                GOOGLE_TOKEN_URL: `${inject("standInUrl")}/google/token`,
                TOKEN_ENCRYPTION_KEY: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
                LANGFUSE_PUBLIC_KEY: "pk-lf-test",
                LANGFUSE_SECRET_KEY: "sk-lf-test",
                LANGFUSE_BASE_URL: inject("standInUrl"),
                INNGEST_EVENT_KEY: TEST_INNGEST.eventKey,
                INNGEST_SIGNING_KEY: TEST_INNGEST.signingKey,
                INNGEST_BASE_URL: inject("standInUrl"),
                MAIL_PUSH_TOKEN: TEST_MAIL.pushToken,
                PUBSUB_PUSH_AUDIENCE: TEST_MAIL.audience,
                PUBSUB_PUSH_SERVICE_ACCOUNT: TEST_MAIL.serviceAccount,
                GOOGLE_JWKS_URL: `${inject("standInUrl")}/google/jwks`,
                GMAIL_API_URL: inject("standInUrl"),
                GMAIL_PUBSUB_TOPIC: "projects/soma-test/topics/gmail",
                SENTRY_DSN: `${inject("standInUrl").replace("://", "://sentrypublickey@")}/42`,
                POSTHOG_API_KEY: "phc_test_project_key",
                POSTHOG_HOST: inject("standInUrl"),
                AXIOM_TOKEN: "xaat-test-axiom-token",
                AXIOM_DATASET: "soma-logs",
                AXIOM_URL: inject("standInUrl"),
              },
            },
          })),
        ],
        test: {
          name: "worker",
          // The worker files share one module graph per workerd instead of evaluating the Worker, the
          // agents SDK and the AI SDK again for every file (measured: the worker project's import time
          // 221–384 s → 45 s, the project 130 s on 2 cores). Each file creates its own people, chats and
          // agents, so none relies on a fresh module state.
          isolate: false,
          include: ["tests/worker/**/*.test.ts"],
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
      {
        test: {
          name: "node",
          include: ["tests/node/**/*.test.ts"],
          environment: "node",
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
