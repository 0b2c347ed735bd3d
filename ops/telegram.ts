// `npm run telegram:register`: setWebhook with url = APP_BASE_URL + /api/messenger/webhook, the
// webhook secret as secret_token, allowed_updates ["message"]; setMyCommands with Soma's commands for
// private chats (the menu "/" opens, agents/commands/index.ts BOT_COMMANDS); setChatMenuButton so the
// chat's menu button opens the Mini App at APP_BASE_URL/tg; then prints getWebhookInfo, and warns
// when getMe says the bot can still be added to groups (Soma only talks in private chats; BotFather's
// /setjoingroups → Disable turns that off, see docs/runbook.md).
// `npm run telegram:info`: getWebhookInfo only. The token and the secret are never printed.
import { parseArgs } from "node:util";
import { BOT_COMMANDS } from "../agents/commands/index";
import { loadSettings, requireSettings, runMain, type Settings } from "./cli";
import { webhookInfo } from "./smoke";

export async function registerWebhook(settings: Settings, log = console.log): Promise<void> {
  const { APP_BASE_URL, TELEGRAM_BOT_TOKEN, TELEGRAM_WEBHOOK_SECRET } = requireSettings(
    settings,
    ["APP_BASE_URL", "TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET"],
    "telegram:register",
  );
  const url = `${APP_BASE_URL.replace(/\/+$/, "")}/api/messenger/webhook`;
  const root = (settings.TELEGRAM_API_ROOT ?? "https://api.telegram.org").replace(/\/+$/, "");
  const response = await fetch(`${root}/bot${TELEGRAM_BOT_TOKEN}/setWebhook`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ url, secret_token: TELEGRAM_WEBHOOK_SECRET, allowed_updates: ["message"] }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await response.json()) as { ok: boolean; description?: string };
  if (!body.ok) throw new Error(`setWebhook refused: ${body.description ?? response.status}`);
  log(`telegram:register  setWebhook ${url} (secret_token set, allowed_updates ["message"]): ${body.description ?? "ok"}`);
  // The command menu ("/" in a private chat): Soma answers commands in private chats only.
  const commands = await fetch(`${root}/bot${TELEGRAM_BOT_TOKEN}/setMyCommands`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ commands: BOT_COMMANDS, scope: { type: "all_private_chats" } }),
    signal: AbortSignal.timeout(10_000),
  });
  const set = (await commands.json()) as { ok: boolean; description?: string };
  if (!set.ok) throw new Error(`setMyCommands refused: ${set.description ?? commands.status}`);
  log(`telegram:register  setMyCommands: ${BOT_COMMANDS.map((c) => `/${c.command}`).join(" ")} (private chats)`);
  await setMenuButton(root, TELEGRAM_BOT_TOKEN, APP_BASE_URL, log);
  await printInfo(settings, log);
  await warnIfJoinsGroups(root, TELEGRAM_BOT_TOKEN, log);
}

/** What the chat's menu button says: it opens the Mini App, the memory center (worker/routes/mini-app.ts). */
export const MENU_BUTTON_TEXT = "Memory";

/**
 * The chat's menu button opens the Mini App (setChatMenuButton with a `web_app`, the default for every
 * private chat). Telegram takes only https Web App addresses: any other is skipped with a note.
 */
async function setMenuButton(root: string, token: string, baseUrl: string, log: (line: string) => void): Promise<void> {
  const url = `${baseUrl.replace(/\/+$/, "")}/tg`;
  if (!url.startsWith("https://")) {
    log(`telegram:register  setChatMenuButton skipped: the Mini App needs an https APP_BASE_URL (${baseUrl})`);
    return;
  }
  const response = await fetch(`${root}/bot${token}/setChatMenuButton`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ menu_button: { type: "web_app", text: MENU_BUTTON_TEXT, web_app: { url } } }),
    signal: AbortSignal.timeout(10_000),
  });
  const set = (await response.json()) as { ok: boolean; description?: string };
  if (!set.ok) throw new Error(`setChatMenuButton refused: ${set.description ?? response.status}`);
  log(`telegram:register  setChatMenuButton: "${MENU_BUTTON_TEXT}" opens the Mini App at ${url}`);
}

export const JOIN_GROUPS_WARNING =
  "telegram:register  WARNING: this bot can be added to groups (getMe can_join_groups: true). Soma only talks in private chats and answers a group with one notice a day; turn it off in BotFather: /setjoingroups → choose the bot → Disable.";

/** getMe's can_join_groups: a warning when true; a failed getMe is reported, never fatal (the webhook is set). */
async function warnIfJoinsGroups(root: string, token: string, log: (line: string) => void): Promise<void> {
  try {
    const response = await fetch(`${root}/bot${token}/getMe`, { signal: AbortSignal.timeout(10_000) });
    const me = (await response.json()) as { ok: boolean; result?: { username?: string; can_join_groups?: boolean } };
    if (!me.ok) log(`telegram:register  getMe refused (${response.status}): could not check whether the bot can join groups`);
    else if (me.result?.can_join_groups) log(JOIN_GROUPS_WARNING);
    else log(`telegram:register  getMe: @${me.result?.username ?? "?"} cannot be added to groups`);
  } catch (error) {
    log(
      `telegram:register  getMe failed (${error instanceof Error ? error.message : String(error)}): could not check whether the bot can join groups`,
    );
  }
}

export async function printInfo(settings: Settings, log = console.log): Promise<void> {
  const info = await webhookInfo(settings);
  log(`telegram:info  ${JSON.stringify(info, null, 2)}`);
}

runMain(import.meta, async () => {
  const { values, positionals } = parseArgs({ options: { "env-file": { type: "string" } }, allowPositionals: true });
  const settings = loadSettings(process.env, values["env-file"]);
  if (positionals[0] === "info") await printInfo(settings);
  else await registerWebhook(settings);
  return 0;
});
