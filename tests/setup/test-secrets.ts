// Secrets of the test deployment, shared by the Worker's bindings (vitest.config.ts) and the tests
// that must sign or send what the Worker checks. Test values only.
export const TEST_INNGEST = {
  eventKey: "test-event-key",
  signingKey: "signkey-test-8ee6ed2a44a1f3b5c1e6f4b5a2b0c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3",
};

export const TEST_MAIL = {
  pushToken: "test-mail-push-token",
  audience: "https://soma.test/api/webhooks/mail",
  serviceAccount: "gmail-push@soma-test.iam.gserviceaccount.com",
};
