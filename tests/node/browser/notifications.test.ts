// Guards issue 27's notifications in Settings, in Debian's Chromium against `npm start` and the strict
// push-service stand-in: nothing is asked on page load; the button asks, and with permission granted
// this browser's subscription is kept, listed as "this device" with a remove button, and a test
// notification reaches the stand-in encrypted for it; a denial is explained, with no button asking
// again; the service worker shows a pushed notification (delivered with the DevTools Protocol, as a
// push service would). Headless Chromium cannot register with Google's push service offline, so the
// one browser call that needs it, PushManager.subscribe, hands over the stand-in's subscription instead.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPushService, type PushService } from "../push-service";
import { fitsWidth, PHONE, screenshots, signInAsDeveloper, openPage, startSession, type Session } from "./harness";

let session: Session;
let push: PushService;
beforeAll(async () => {
  push = await startPushService();
  process.env.NODE_EXTRA_CA_CERTS = push.caFile;
  session = await startSession();
}, 120_000);
afterAll(async () => {
  await session?.stop();
  await push?.stop();
});

/** PushManager with the stand-in's subscription for this page: subscribe() makes it, getSubscription() returns it. */
function standInPushManager(subscription: { endpoint: string; keys: { p256dh: string; auth: string } }): string {
  return `(() => {
    const json = ${JSON.stringify({ ...subscription, expirationTime: null })};
    const made = () => ({ endpoint: json.endpoint, expirationTime: null, toJSON: () => json, unsubscribe: async () => { localStorage.removeItem("sub"); return true; } });
    PushManager.prototype.subscribe = async function () { localStorage.setItem("sub", "1"); return made(); };
    PushManager.prototype.getSubscription = async function () { return localStorage.getItem("sub") ? made() : null; };
  })();`;
}

describe("notifications in Settings", () => {
  it("asks only when asked, lists this device, sends a test push, and removes it", async () => {
    const device = push.device();
    const { page, problems } = await openPage(session.browser);
    await page.context().grantPermissions(["notifications"], { origin: session.app.url });
    await page.addInitScript(standInPushManager(device));
    await signInAsDeveloper(page, session.app.url);
    await page.getByRole("link", { name: "Settings" }).click();
    const turnOn = page.getByRole("button", { name: "Turn on notifications in this browser" });
    await turnOn.waitFor();
    expect(await page.getByText("No device has notifications on.").count()).toBe(1);
    await screenshots(page, "settings-notifications-off");

    await turnOn.focus();
    await page.keyboard.press("Enter");
    const devices = page.getByRole("list", { name: "Devices with notifications" });
    await expect.poll(() => devices.innerText(), { timeout: 10_000 }).toContain("Chrome on Linux (this device)");
    expect(await turnOn.count()).toBe(0);
    await page.getByRole("button", { name: "Send a test notification" }).click();
    await expect.poll(() => page.getByRole("status").filter({ hasText: "test notification went to 1 device" }).count()).toBe(1);
    expect(push.messages.map((m) => [m.device, m.payload.title])).toEqual([[device.id, "Soma"]]);
    expect(push.refused).toEqual([]);
    await screenshots(page, "settings-notifications-on");
    await page.setViewportSize(PHONE);
    expect(await fitsWidth(page)).toBe(true);

    await page.getByRole("button", { name: "Remove Chrome on Linux" }).click();
    await expect.poll(() => page.getByText("No device has notifications on.").count()).toBe(1);
    expect(await turnOn.count()).toBe(1);
    expect(problems).toEqual([]);
  });

  it("explains a denial and does not ask again", async () => {
    const { page, problems } = await openPage(session.browser);
    await signInAsDeveloper(page, session.app.url);
    await page.getByRole("link", { name: "Settings" }).click();
    const turnOn = page.getByRole("button", { name: "Turn on notifications in this browser" });
    await turnOn.waitFor();
    // The person answers the browser's prompt with Block (set through the DevTools Protocol: headless
    // Chromium shows no prompt), then presses the button.
    const { targetInfo } = (await (await page.context().newCDPSession(page)).send("Target.getTargetInfo")) as {
      targetInfo: { browserContextId: string };
    };
    const browser = await session.browser.newBrowserCDPSession();
    await browser.send("Browser.setPermission", {
      permission: { name: "notifications" },
      setting: "denied",
      origin: session.app.url,
      browserContextId: targetInfo.browserContextId,
    });
    await turnOn.click();
    await expect.poll(() => page.getByRole("status").filter({ hasText: "Notifications are blocked for Soma" }).count()).toBe(1);
    expect(await turnOn.count()).toBe(0);
    expect(await page.getByText("No device has notifications on.").count()).toBe(1);
    await screenshots(page, "settings-notifications-denied");
    // Opened again, it still says so and still asks nothing.
    await page.reload();
    await expect.poll(() => page.getByRole("status").filter({ hasText: "Notifications are blocked for Soma" }).count()).toBe(1);
    expect(await turnOn.count()).toBe(0);
    expect(problems).toEqual([]);
  });

  it("shows a pushed notification from its service worker", async () => {
    const { page, problems } = await openPage(session.browser);
    await page.context().grantPermissions(["notifications"], { origin: session.app.url });
    await signInAsDeveloper(page, session.app.url);
    await expect
      .poll(() => page.evaluate<string | null>("navigator.serviceWorker.ready.then((r) => r.active && r.active.state)"), {
        timeout: 15_000,
      })
      .toBe("activated");
    const cdp = await page.context().newCDPSession(page);
    const registrations: Array<{ registrationId: string; scopeURL: string }> = [];
    cdp.on("ServiceWorker.workerRegistrationUpdated", (event: { registrations: typeof registrations }) =>
      registrations.push(...event.registrations),
    );
    await cdp.send("ServiceWorker.enable");
    await expect.poll(() => registrations.some((r) => r.scopeURL === `${session.app.url}/`)).toBe(true);
    const registration = registrations.find((r) => r.scopeURL === `${session.app.url}/`)!;
    const notice = { title: "⏰ Reminder", body: "call Ana", tag: "reminder-1", url: "/app/reminders", at: new Date().toISOString() };
    await cdp.send("ServiceWorker.deliverPushMessage", {
      origin: session.app.url,
      registrationId: registration.registrationId,
      data: JSON.stringify(notice),
    });
    const shown = () =>
      page.evaluate<Array<{ title: string; body: string; tag: string; url: string }>>(
        "navigator.serviceWorker.ready.then((r) => r.getNotifications()).then((all) => all.map((n) => ({ title: n.title, body: n.body, tag: n.tag, url: n.data && n.data.url })))",
      );
    await expect
      .poll(shown, { timeout: 10_000 })
      .toEqual([{ title: "⏰ Reminder", body: "call Ana", tag: "reminder-1", url: "/app/reminders" }]);
    // The same reminder pushed again replaces it (its tag): one notification, not two.
    await cdp.send("ServiceWorker.deliverPushMessage", {
      origin: session.app.url,
      registrationId: registration.registrationId,
      data: JSON.stringify(notice),
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await shown()).toHaveLength(1);
    // A tap: Chromium has no way to click a notification from a test, so its service worker is asked to do
    // what its notificationclick handler does with that notification (openNotice): the open window goes there.
    expect(new URL(page.url()).pathname).toBe("/app");
    const worker = page
      .context()
      .serviceWorkers()
      .find((w) => new URL(w.url()).pathname === "/sw.js");
    expect(worker).toBeDefined();
    await worker!.evaluate("self.registration.getNotifications().then(([notice]) => openNotice(notice.data.url))");
    await expect.poll(() => new URL(page.url()).pathname, { timeout: 10_000 }).toBe("/app/reminders");
    await expect.poll(() => page.getByRole("heading", { name: "Upcoming" }).count(), { timeout: 10_000 }).toBe(1);
    await screenshots(page, "notification-opened-reminders");
    expect(problems).toEqual([]);
  });
});
