// `npm run mail:watch`: the spec's one-time wiring step "call the mail watch per connected user" —
// users.watch on GMAIL_PUBSUB_TOPIC for every person with a Google connection, now. (The daily
// mail-watch-renew workflow keeps them alive afterwards.) Reads .env, then the environment; needs
// DATABASE_URL, TOKEN_ENCRYPTION_KEY, GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET and GMAIL_PUBSUB_TOPIC.
// `-- --account a@gmail.com` (repeatable) watches only those mailboxes. Prints one line per person
// (never a token) and exits 1 if any watch failed.
import { parseArgs } from "node:util";
import { loadConfig } from "../platform/config";
import { renewWatches, type WatchResult } from "../agents/workflows/functions/mail-watch-renew";
import { Database } from "../db/database";
import { watchesExpiringBefore } from "../db/repositories/connections";
import { loadSettings, requireSettings, runMain } from "./cli";

export async function mailWatch(
  environment: NodeJS.ProcessEnv = process.env,
  log = console.log,
  accounts: string[] = [],
): Promise<WatchResult[]> {
  const settings = loadSettings(environment);
  const { DATABASE_URL } = requireSettings(
    settings,
    ["DATABASE_URL", "GMAIL_PUBSUB_TOPIC", "TOKEN_ENCRYPTION_KEY", "GOOGLE_CLIENT_ID", "GOOGLE_CLIENT_SECRET"],
    "mail:watch",
  );
  const config = loadConfig(settings);
  const db = new Database(DATABASE_URL, { max: 2 });
  try {
    const people = await db.withSystem((tx) => watchesExpiringBefore(tx, null, accounts));
    log(`mail:watch  ${people.length} connected mailbox${people.length === 1 ? "" : "es"}, topic ${config.GMAIL_PUBSUB_TOPIC}`);
    const results = await renewWatches({ config, db }, people);
    for (const r of results) log(`mail:watch  ${r.userId}  ${r.ok ? `watching until ${r.expiresAt}` : `FAILED ${r.error}`}`);
    return results;
  } finally {
    await db.close();
  }
}

runMain(import.meta, async () => {
  const { values } = parseArgs({ options: { account: { type: "string", multiple: true } } });
  const results = await mailWatch(process.env, console.log, values.account ?? []);
  return results.every((r) => r.ok) ? 0 : 1;
});
