// Guards issue 27's "a reply finished after the person left": a web chat turn that ends while none of
// the person's windows is open reaches their devices as a push ("Soma answered" and its first words,
// opening the chat), through the strict push-service stand-in; a reply finished with the app open is
// not pushed. The model is the stand-in, held until the page is gone.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startPushService, type PushService } from "../push-service";
import { hang } from "../service-http";
import { waitFor } from "../wait";
import { signedInPage, startSession, type Session } from "./harness";

const standIn = inject("standInUrl");
let session: Session;
let push: PushService;
beforeAll(async () => {
  push = await startPushService();
  process.env.NODE_EXTRA_CA_CERTS = push.caFile;
  session = await startSession({ AI_PROVIDER: "openai-compatible", AI_BASE_URL: `${standIn}/v1`, AI_MODEL: "stand-in" });
}, 120_000);
afterAll(async () => {
  await session?.stop();
  await push?.stop();
});

/** How many requests the stand-in holds for a hang (a turn's request waiting for the model). */
async function held(match: string): Promise<number> {
  const answer = await fetch(`${standIn}/__held?target=chat&match=${encodeURIComponent(match)}`);
  return ((await answer.json()) as { held: number }).held;
}

describe("a reply that finishes after the person left", () => {
  it("is pushed to their devices; one finished with the app open is not", async () => {
    const { page } = await signedInPage(session);
    const device = push.device();
    const subscribed = await page.request.post(`${session.app.url}/api/push/subscriptions`, {
      headers: { origin: session.app.url },
      data: { ...device, label: "Chrome on Android" },
    });
    expect(subscribed.status()).toBe(201);
    const box = page.getByRole("textbox", { name: "Message", exact: true });

    // With the app open: answered on the page, nothing pushed.
    await box.fill("hello while I'm here");
    await page.keyboard.press("Enter");
    await expect.poll(() => page.getByRole("article", { name: "From Soma" }).count(), { timeout: 20_000 }).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(push.messages.filter((m) => m.device === device.id)).toEqual([]);

    // The model is slow; the person closes the app before the reply is done.
    const release = await hang(standIn, "chat", "tell me when you're done");
    try {
      await box.fill("tell me when you're done");
      await page.keyboard.press("Enter");
      await waitFor(async () => (await held("tell me when you're done")) > 0, 20_000, "the turn to reach the model");
      await page.context().close();
    } finally {
      await release();
    }
    await waitFor(() => push.messages.some((m) => m.device === device.id), 20_000, "the reply's push");
    const [message] = push.messages.filter((m) => m.device === device.id);
    expect(message).toMatchObject({ urgency: "normal", topic: "reply", ttl: 86_400 });
    expect(message!.payload).toMatchObject({ title: "Soma answered", tag: "reply", url: "/app" });
    expect(message!.payload.body.length).toBeGreaterThan(0);
    expect(message!.payload.body.length).toBeLessThanOrEqual(140);
    expect(push.refused).toEqual([]);
  });
});
