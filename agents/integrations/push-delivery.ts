// A notice pushed to every device of one person (their Web Push subscriptions,
// db/repositories/push-subscriptions.ts): each opened under their row-level security, sent, noted when
// delivered, and deleted when its push service says it is gone (404 or 410). A device whose push
// service is down is reported, and the caller (an Inngest step) decides whether to try again; a device
// sent to twice shows one notification, since the second has the same tag and replaces the first.
import type { Database } from "../../db/database";
import { markPushed, openPushSubscriptions, removePushDevice } from "../../db/repositories/push-subscriptions";
import { TokenCipher } from "../../db/token-cipher";
import type { Config } from "../../platform/config";
import { pushConfigured, sendPush, type Notice, type PushOptions } from "./web-push";

export interface PushReport {
  devices: number;
  sent: number;
  pruned: number;
  /** Devices whose push service could not take it now (429, 5xx, the network). */
  retry: number;
}

export async function pushToPerson(
  deps: { db: Database; config: Config },
  userId: string,
  notice: Notice,
  options: PushOptions,
): Promise<PushReport> {
  const { config, db } = deps;
  const report: PushReport = { devices: 0, sent: 0, pruned: 0, retry: 0 };
  if (!pushConfigured(config) || !config.TOKEN_ENCRYPTION_KEY) return report;
  const cipher = new TokenCipher(config.TOKEN_ENCRYPTION_KEY);
  const devices = await db.withUser(userId, (tx) => openPushSubscriptions(tx, userId, cipher));
  report.devices = devices.length;
  // The devices at once: a slow push service holds up no other.
  const outcomes = await Promise.all(devices.map(async (device) => ({ device, outcome: await sendPush(config, device, notice, options) })));
  await db.withUser(userId, async (tx) => {
    for (const { device, outcome } of outcomes) {
      if (outcome === "sent") {
        report.sent++;
        await markPushed(tx, device.id);
      } else if (outcome === "gone") {
        report.pruned++;
        await removePushDevice(tx, device.id);
      } else if (outcome === "retry") {
        report.retry++;
      }
    }
  });
  return report;
}
