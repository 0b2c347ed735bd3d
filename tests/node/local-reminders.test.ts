// Guards reminders under `npm start` with no Inngest dev server (a newcomer's first run): a reminder
// still arrives at its time, delivered by the person's own agent (agents/local-runs.ts) instead of being
// dropped — and across a restart: every process of npm start killed while it waits, npm start again over
// the same state, and it arrives once, by push, to the strict push-service stand-in. The reminder is
// made through the web app's import (a file with a reminder 12 seconds ahead), which hands it over the
// same way schedule_create does.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freePort } from "./helpers";
import { startPushService, type PushService } from "./push-service";
import { registerServiceHooks } from "./service-hooks";
import { killEverything, launch, tempDir, type Service } from "./service-process";
import { sleep, waitFor } from "./wait";

const standIn = inject("standInUrl");
const services = registerServiceHooks(standIn);
let push: PushService;
beforeAll(async () => {
  push = await startPushService();
});
afterAll(() => push?.stop());

async function signIn(service: Service): Promise<string> {
  const answer = await fetch(`${service.url}/auth/dev`, { method: "POST", headers: { origin: service.url } });
  expect(answer.status).toBe(200);
  return answer.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
}

/** The person's export with one more reminder, due at `at`. */
async function fileWithReminder(service: Service, cookie: string, text: string, at: Date): Promise<string> {
  const file = (await (await fetch(`${service.url}/api/export`, { headers: { cookie } })).json()) as { events: unknown[] };
  const now = new Date().toISOString();
  file.events.push({
    id: crypto.randomUUID(),
    kind: "reminder",
    occurredAt: at.toISOString(),
    payload: { text },
    entityIds: [],
    status: "scheduled",
    sourceId: null,
    createdAt: now,
    toldAt: now,
  });
  return JSON.stringify(file);
}

describe("npm start without an Inngest dev server", () => {
  it("delivers a reminder at its time by push, once, though every process was killed while it waited", async () => {
    const stateDir = tempDir("soma-local-reminders-");
    const port = await freePort();
    const env = { NODE_EXTRA_CA_CERTS: push.caFile };
    let service = await launch({ stateDir, port, standIn: services.tap().url, env });
    const cookie = await signIn(service);
    const same = { cookie, origin: service.url, "content-type": "application/json" };
    const device = push.device();
    const subscribed = await fetch(`${service.url}/api/push/subscriptions`, {
      method: "POST",
      headers: same,
      body: JSON.stringify({ ...device, label: "Chrome on Linux" }),
    });
    expect(subscribed.status).toBe(201);

    const text = `stretch ${crypto.randomUUID().slice(0, 6)}`;
    const due = new Date(Date.now() + 12_000);
    const imported = await fetch(`${service.url}/api/import`, {
      method: "POST",
      headers: same,
      body: await fileWithReminder(service, cookie, text, due),
    });
    expect(imported.status).toBe(200);

    // Every process of npm start killed while the reminder waits; npm start again over the same state.
    await killEverything(service);
    service = await launch({ stateDir, port, standIn: services.tap().url, env });
    const mine = () => push.messages.filter((m) => m.device === device.id);
    await waitFor(() => mine().length > 0, 60_000, "the reminder's push");
    const arrivedAt = Date.now();
    expect(arrivedAt).toBeGreaterThanOrEqual(due.getTime());
    expect(mine()[0]!.payload).toMatchObject({ title: "⏰ Reminder", body: text, url: "/app/reminders" });
    expect(mine()[0]).toMatchObject({ urgency: "high", ttl: 3600 });
    await sleep(3_000); // a second copy would be here by now
    expect(mine()).toHaveLength(1);
    expect(push.refused).toEqual([]);
    const listed = (await (await fetch(`${service.url}/api/reminders`, { headers: { cookie } })).json()) as {
      past: Array<{ text: string; status: string }>;
    };
    expect(listed.past.find((r) => r.text === text)?.status).toBe("delivered");
    console.log(JSON.stringify({ measure: "local-reminder", due_to_push_ms: arrivedAt - due.getTime() }));
  }, 200_000);
});
