// Guards `npm run telegram:register` against a bot that can be added to groups (finding 1): getMe's
// can_join_groups is checked after setWebhook and a true value is a warning naming BotFather's fix.
import { describe, expect, inject, it } from "vitest";
import { BOT_COMMANDS, HELP } from "../../agents/commands/index";
import { JOIN_GROUPS_WARNING, MENU_BUTTON_TEXT, registerWebhook } from "../../ops/telegram";

const standIn = inject("standInUrl");

async function register(token: string, baseUrl = "https://soma.example.com"): Promise<string[]> {
  const lines: string[] = [];
  await registerWebhook(
    {
      TELEGRAM_BOT_TOKEN: token,
      TELEGRAM_WEBHOOK_SECRET: "register-secret",
      TELEGRAM_API_ROOT: standIn,
      APP_BASE_URL: baseUrl,
    },
    (line) => lines.push(line),
  );
  return lines;
}

describe("finding 1: group chats — telegram:register checks can_join_groups", () => {
  it("warns, with the BotFather steps, when getMe says the bot can join groups", async () => {
    const token = `${Math.floor(Math.random() * 1e9)}:joins-groups`;
    const lines = await register(token);
    expect(lines).toContain(JOIN_GROUPS_WARNING);
    expect(JOIN_GROUPS_WARNING).toContain("/setjoingroups");
    expect(lines.join("\n")).not.toContain(token);
  });

  it("says so and does not warn when the bot cannot join groups", async () => {
    const lines = await register(`${Math.floor(Math.random() * 1e9)}:private-only`);
    expect(lines).not.toContain(JOIN_GROUPS_WARNING);
    expect(lines.at(-1)).toBe("telegram:register  getMe: @soma_test_bot cannot be added to groups");
  });
});

describe("issue 27: the command menu", () => {
  it("sets Soma's commands for private chats, each one a command the bot answers", async () => {
    const lines = await register(`${Math.floor(Math.random() * 1e9)}:menu`);
    expect(lines).toContain(`telegram:register  setMyCommands: ${BOT_COMMANDS.map((c) => `/${c.command}`).join(" ")} (private chats)`);
    const calls = (await (await fetch(`${standIn}/__calls?method=setMyCommands`)).json()) as Array<{
      payload: { commands: unknown; scope: unknown };
    }>;
    expect(calls.at(-1)?.payload).toEqual({ commands: BOT_COMMANDS, scope: { type: "all_private_chats" } });
    // Every command in the menu is one /help describes (and so one the bot answers).
    for (const { command } of BOT_COMMANDS) if (command !== "help") expect(HELP, command).toContain(`/${command}`);
  });
});

describe("issue 29: the chat's menu button opens the Mini App", () => {
  const menuCalls = async () =>
    (await (await fetch(`${standIn}/__calls?method=setChatMenuButton`)).json()) as Array<{ payload: { menu_button: unknown } }>;

  it("sets a web_app menu button at APP_BASE_URL/tg for every private chat", async () => {
    const before = (await menuCalls()).length;
    const lines = await register(`${Math.floor(Math.random() * 1e9)}:menu-button`, "https://soma.example.com/");
    const calls = await menuCalls();
    expect(calls.length).toBe(before + 1);
    expect(calls.at(-1)?.payload).toEqual({
      menu_button: { type: "web_app", text: MENU_BUTTON_TEXT, web_app: { url: "https://soma.example.com/tg" } },
    });
    expect(lines).toContain(
      `telegram:register  setChatMenuButton: "${MENU_BUTTON_TEXT}" opens the Mini App at https://soma.example.com/tg`,
    );
  });

  it("skips it, saying why, when the app has no https address (Telegram would refuse it)", async () => {
    const before = (await menuCalls()).length;
    const lines = await register(`${Math.floor(Math.random() * 1e9)}:local`, "http://127.0.0.1:8787");
    expect((await menuCalls()).length).toBe(before);
    expect(lines).toContain(
      "telegram:register  setChatMenuButton skipped: the Mini App needs an https APP_BASE_URL (http://127.0.0.1:8787)",
    );
  });
});
