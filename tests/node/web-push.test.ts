// Guards issue 27's Web Push from the Worker, against `npm start` (workerd under wrangler dev, its own
// VAPID pair made at first start) and a strict push-service stand-in over https: a device subscribed
// through /api/push gets a test notification the stand-in accepts (VAPID, aes128gcm decrypted with the
// device's keys: the words travel encrypted end to end), with its TTL, urgency and topic; a dead
// subscription (410) is pruned; endpoints outside the known push services, plain http, malformed keys
// and other sites' requests are refused with a clear 4xx; one person never sees another's devices; the
// key pair survives a restart.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { start, type Running } from "../../ops/start";
import { freePort } from "./helpers";
import { startPushService, type PushService } from "./push-service";

let push: PushService;
let soma: Running;
let stateDir: string;

async function signIn(url: string): Promise<string> {
  const response = await fetch(`${url}/auth/dev`, { method: "POST", headers: { origin: url } });
  expect(response.status).toBe(200);
  return response.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
}

beforeAll(async () => {
  push = await startPushService();
  // workerd under wrangler dev trusts extra CAs from here: the stand-in's certificate is the test's own.
  process.env.NODE_EXTRA_CA_CERTS = push.caFile;
  stateDir = mkdtempSync(`${tmpdir()}/soma-push-`);
  soma = await start({ PORT: String(await freePort()), SOMA_STATE_DIR: stateDir, DATABASE_URL: "" }, () => {});
}, 120_000);
afterAll(async () => {
  await soma?.stop();
  await push?.stop();
});

describe("Web Push from the Worker", () => {
  it("pushes a notification a strict push service accepts and decrypts, and prunes a dead subscription", async () => {
    const url = soma.url;
    const cookie = await signIn(url);
    const json = { cookie, origin: url, "content-type": "application/json" };
    const state = (await (await fetch(`${url}/api/push`, { headers: { cookie } })).json()) as {
      available: boolean;
      publicKey: string;
      devices: unknown[];
    };
    const keys = JSON.parse(readFileSync(`${stateDir}/vapid.json`, "utf8")) as { publicKey: string };
    expect(state).toEqual({ available: true, publicKey: keys.publicKey, devices: [] });

    const phone = push.device();
    const subscribe = (device: { endpoint: string; keys: object }, label: string) =>
      fetch(`${url}/api/push/subscriptions`, {
        method: "POST",
        headers: json,
        body: JSON.stringify({ ...device, expirationTime: null, label }),
      });
    const created = await subscribe(phone, "Chrome on Android");
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };

    const tested = await fetch(`${url}/api/push/test`, { method: "POST", headers: { cookie, origin: url } });
    expect(await tested.json()).toEqual({ devices: 1, sent: 1, pruned: 0, retry: 0 });
    expect(push.refused).toEqual([]);
    expect(push.messages).toHaveLength(1);
    const [message] = push.messages;
    expect(message).toMatchObject({ device: phone.id, ttl: 300, urgency: "normal", topic: "test" });
    expect(message!.payload).toMatchObject({ title: "Soma", tag: "test", url: "/app/settings" });
    expect(message!.payload.body).toMatch(/^Notifications are on/);
    expect(message!.vapid).toMatchObject({ aud: push.origin, key: keys.publicKey, sub: "mailto:soma@localhost" });

    // The same browser subscribing again is the same device, with its new label.
    expect((await subscribe(phone, "Chrome on Pixel")).status).toBe(201);
    // A second device that its push service says is gone is deleted on the next push.
    const old = push.device(410);
    expect((await subscribe(old, "Firefox on Linux")).status).toBe(201);
    const listed = (await (await fetch(`${url}/api/push`, { headers: { cookie } })).json()) as {
      devices: Array<{ id: string; label: string; endpointHash: string; lastUsedAt: string | null }>;
    };
    expect(listed.devices.map((d) => d.label)).toEqual(["Chrome on Pixel", "Firefox on Linux"]);
    expect(listed.devices[0]).toMatchObject({ id, lastUsedAt: expect.any(String) });
    expect(listed.devices[0]!.endpointHash).toMatch(/^[0-9a-f]{64}$/);

    const again = await fetch(`${url}/api/push/test`, { method: "POST", headers: { cookie, origin: url } });
    expect(await again.json()).toEqual({ devices: 2, sent: 1, pruned: 1, retry: 0 });
    const after = (await (await fetch(`${url}/api/push`, { headers: { cookie } })).json()) as { devices: Array<{ label: string }> };
    expect(after.devices.map((d) => d.label)).toEqual(["Chrome on Pixel"]);

    // Removing a device; a second time it is gone (404).
    const removed = await fetch(`${url}/api/push/subscriptions/${id}`, { method: "DELETE", headers: { cookie, origin: url } });
    expect(await removed.json()).toEqual({ removed: true });
    expect((await fetch(`${url}/api/push/subscriptions/${id}`, { method: "DELETE", headers: { cookie, origin: url } })).status).toBe(404);
  });

  it("refuses endpoints it must not post to, malformed keys, and other sites, each with a clear 4xx", async () => {
    const url = soma.url;
    const cookie = await signIn(url);
    const json = { cookie, origin: url, "content-type": "application/json" };
    const device = push.device();
    const cases: Array<[object, number, RegExp]> = [
      [{ ...device, endpoint: device.endpoint.replace("https:", "http:") }, 400, /is not https/],
      [{ ...device, endpoint: "https://metadata.google.internal/computeMetadata/v1/" }, 400, /is not a known push service/],
      [{ ...device, endpoint: "https://fcm.googleapis.com:8443/fcm/send/x" }, 400, /port/],
      [{ ...device, endpoint: "not a url" }, 400, /is not a URL/],
      [{ ...device, keys: { p256dh: "short", auth: device.keys.auth } }, 400, /p256dh/],
      [{ endpoint: device.endpoint }, 400, /keys/],
    ];
    for (const [body, status, message] of cases) {
      const response = await fetch(`${url}/api/push/subscriptions`, { method: "POST", headers: json, body: JSON.stringify(body) });
      const answer = (await response.json()) as { error: { message: string } };
      expect({ status: response.status, message: answer.error.message }, JSON.stringify(body)).toEqual({
        status,
        message: expect.stringMatching(message),
      });
    }
    const crossSite = await fetch(`${url}/api/push/subscriptions`, {
      method: "POST",
      headers: { ...json, origin: "https://evil.example" },
      body: JSON.stringify(device),
    });
    expect(crossSite.status).toBe(403);
    const signedOut = await fetch(`${url}/api/push`);
    expect(signedOut.status).toBe(401);
  });

  it("keeps its VAPID pair across a restart, so a subscribed browser stays subscribed", async () => {
    const before = readFileSync(`${stateDir}/vapid.json`, "utf8");
    await soma.stop();
    soma = await start({ PORT: String(await freePort()), SOMA_STATE_DIR: stateDir, DATABASE_URL: "" }, () => {});
    expect(readFileSync(`${stateDir}/vapid.json`, "utf8")).toBe(before);
    const cookie = await signIn(soma.url);
    const state = (await (await fetch(`${soma.url}/api/push`, { headers: { cookie } })).json()) as { publicKey: string };
    expect(state.publicKey).toBe((JSON.parse(before) as { publicKey: string }).publicKey);
  }, 120_000);
});
