// `npm run mail:watch`: the spec's one-time wiring step "call the mail watch per connected user" —
// users.watch on GMAIL_PUBSUB_TOPIC for every person with a Google connection, now. (The daily
// mail-watch-renew workflow keeps them alive afterwards.) Reads .env, then the environment; needs
// DATABASE_URL, TOKEN_ENCRYPTION_KEY, GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET and GMAIL_PUBSUB_TOPIC.
// `-- --account a@gmail.com` (repeatable) watches only those mailboxes. Prints one line per person
// (never a token) and exits 1 if any watch failed.
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { CONFIG_KEYS, loadConfig } from "../agents/config";
import { renewWatches, type WatchResult } from "../agents/workflows/functions/mail-watch-renew";
import { Database } from "../db/database";
import { watchesExpiringBefore } from "../db/repositories/connections";
import { readEnvFile } from "./dotenv";

const root = fileURLToPath(new URL("..", import.meta.url));

export async function mailWatch(environment: NodeJS.ProcessEnv = process.env, log = console.log, accounts: string[] = []): Promise<WatchResult[]> {
  const values: Record<string, string> = { ...readEnvFile(`${root}.env`) };
  for (const [key, value] of Object.entries(environment)) if (value) values[key] = value;
  const databaseUrl = values.DATABASE_URL;
  if (!databaseUrl) throw new Error("mail:watch needs DATABASE_URL");
  const config = loadConfig(Object.fromEntries(CONFIG_KEYS.filter((k) => values[k]).map((k) => [k, values[k]!])));
  for (const key of ["GMAIL_PUBSUB_TOPIC", "TOKEN_ENCRYPTION_KEY", "GOOGLE_CLIENT_ID", "GOOGLE_CLIENT_SECRET"] as const) {
    if (!config[key]) throw new Error(`mail:watch needs ${key}`);
  }
  const db = new Database(databaseUrl, { max: 2 });
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

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({ options: { account: { type: "string", multiple: true } } });
  mailWatch(process.env, console.log, values.account ?? []).then(
    (results) => process.exit(results.every((r) => r.ok) ? 0 : 1),
    (error: unknown) => {
      console.error(`mail:watch failed: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    },
  );
}
