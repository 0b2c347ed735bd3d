// Guards `npm run telegram:register` against a bot that can be added to groups (finding 1): getMe's
// can_join_groups is checked after setWebhook and a true value is a warning naming BotFather's fix.
import { describe, expect, inject, it } from "vitest";
import { BOT_COMMANDS, HELP } from "../../agents/commands/index";
import { JOIN_GROUPS_WARNING, registerWebhook } from "../../ops/telegram";

const standIn = inject("standInUrl");

async function register(token: string): Promise<string[]> {
  const lines: string[] = [];
  await registerWebhook(
    {
      TELEGRAM_BOT_TOKEN: token,
      TELEGRAM_WEBHOOK_SECRET: "register-secret",
      TELEGRAM_API_ROOT: standIn,
      APP_BASE_URL: "https://soma.example.com",
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
