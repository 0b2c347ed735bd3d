// The person's devices for notifications (Web Push), for Settings (session required, same origin for changes):
//   GET    /api/push                   {available, publicKey, devices: [{id, label, endpointHash, createdAt, lastUsedAt}]}
//                                      available: this deployment can push (a VAPID key pair); publicKey:
//                                      the applicationServerKey a browser subscribes with
//   POST   /api/push/subscriptions     {endpoint, keys: {p256dh, auth}, label?} (PushSubscription.toJSON()):
//                                      201 {id}; 400 for an endpoint that is not an https URL of a known push
//                                      service (loopback too outside production) or malformed keys; 409 past
//                                      MAX_DEVICES; 503 when push is not set up here
//   DELETE /api/push/subscriptions/:id removes a device: 200 {removed: true}; 404 not the person's
//   POST   /api/push/test              a test notification to every device: {devices, sent, pruned, retry}
// The same browser subscribing again replaces its keys (one row per endpoint); a browser someone else
// subscribed before is theirs no longer (releaseEndpoint). Subscribing and testing spend the edit budget.
import { Hono } from "hono";
import { z } from "zod";
import { listPushDevices, releaseEndpoint, removePushDevice, savePushSubscription } from "../../db/repositories/push-subscriptions";
import { TokenCipher } from "../../db/token-cipher";
import { pushToPerson } from "../../agents/integrations/push-delivery";
import { pushConfigured, pushEndpointProblem } from "../../agents/integrations/web-push";
import { requireSameOrigin } from "../auth/origin";
import { requireSession } from "../auth/session";
import { limitBody } from "../body-limit";
import { ApiError } from "../errors";
import { rateLimited } from "../rate-budget";
import type { AppEnv } from "../types";
import { readJson } from "../validation";

/** Devices a person may have notifications on at once. */
const MAX_DEVICES = 20;

const base64url = (bytes: number) =>
  z
    .string()
    .regex(/^[A-Za-z0-9_-]+={0,2}$/, "must be base64url")
    .refine((value) => Math.floor((value.replace(/=+$/, "").length * 3) / 4) === bytes, `must be ${bytes} bytes`);

const Subscription = z.object({
  endpoint: z.string().max(2048),
  expirationTime: z.number().nullish(),
  // An uncompressed P-256 point and a 16-byte secret (RFC 8291).
  keys: z.object({ p256dh: base64url(65), auth: base64url(16) }),
  label: z.string().trim().max(80).optional(),
});

export const push = new Hono<AppEnv>()
  .use(requireSession("reject"))
  .get("/", async (c) => {
    const devices = await c.var.db.withUser(c.var.person.id, listPushDevices);
    const available = pushConfigured(c.var.config) && Boolean(c.var.config.TOKEN_ENCRYPTION_KEY);
    return c.json({ available, publicKey: available ? (c.var.config.VAPID_PUBLIC_KEY ?? null) : null, devices });
  })
  .post("/subscriptions", requireSameOrigin, limitBody(4096), rateLimited("edit"), async (c) => {
    const { config } = c.var;
    if (!pushConfigured(config) || !config.TOKEN_ENCRYPTION_KEY)
      throw new ApiError("unavailable", "Notifications are not set up on this Soma.");
    const { label, expirationTime: _expires, ...subscription } = await readJson(c, Subscription);
    const problem = pushEndpointProblem(subscription.endpoint, config);
    if (problem) throw new ApiError("bad_request", `The subscription's endpoint ${problem}.`);
    const userId = c.var.person.id;
    await c.var.db.withSystem((tx) => releaseEndpoint(tx, subscription.endpoint, userId));
    const cipher = new TokenCipher(config.TOKEN_ENCRYPTION_KEY);
    const id = await c.var.db.withUser(userId, (tx) =>
      savePushSubscription(tx, userId, subscription, label || "A browser", cipher, MAX_DEVICES),
    );
    if (!id) throw new ApiError("conflict", `Notifications are on in ${MAX_DEVICES} browsers already; remove one in Settings first.`);
    return c.json({ id }, 201);
  })
  .delete("/subscriptions/:id", requireSameOrigin, async (c) => {
    const id = z.uuid().safeParse(c.req.param("id"));
    if (!id.success) throw new ApiError("bad_request", "A device's id is the one GET /api/push lists.");
    const removed = await c.var.db.withUser(c.var.person.id, (tx) => removePushDevice(tx, id.data));
    if (!removed) throw new ApiError("not_found", "No such device.");
    return c.json({ removed: true });
  })
  .post("/test", requireSameOrigin, rateLimited("edit"), async (c) => {
    const report = await pushToPerson(
      { db: c.var.db, config: c.var.config },
      c.var.person.id,
      {
        title: "Soma",
        body: "Notifications are on: reminders and the replies you miss will show up here.",
        tag: "test",
        url: "/app/settings",
        at: new Date().toISOString(),
      },
      { ttlSeconds: 300, urgency: "normal", topic: "test" },
    );
    return c.json(report);
  });
