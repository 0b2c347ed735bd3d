// Bot commands, answered by the agent from its inbox like any message (in order, once), without the
// model: /start /help /memories [type] /reset /login /import <saved memories>, /forget <words> (agents/commands/forget.ts), the
// person's time (/timezone /reminders /cancel, agents/commands/time.ts) and facts (/facts, agents/commands/standing-facts.ts).
import type { Database } from "../../db/database";
import { createLoginToken } from "../../db/repositories/auth";
import { recentEntities } from "../../db/repositories/memory";
import { cancelCommand, remindersCommand, timezoneCommand } from "./time";
import { exportCommand } from "./export";
import { factsCommand } from "./standing-facts";
import { forgetCommand } from "./forget";
import type { Reply } from "../inbox";

/**
 * What a newcomer can say first: each works with every model Soma runs, the offline one included (its
 * phrasings: agents/integrations/model/offline-model.ts), and in this order builds on the one before.
 * The Telegram welcome lists them; the web chat's empty page offers them to tap (GET /api/me).
 */
export const FIRST_MESSAGES = [
  "I just finished reading Dune by Frank Herbert",
  "Which books did I read?",
  "Remember that my sister's birthday is on 12 May",
  "What do you remember about Dune?",
];

export const WELCOME = [
  "Hi, I'm Soma. I remember what matters to you and find it again when you ask.",
  "",
  "Try:",
  ...FIRST_MESSAGES.map((message) => `• ${message}`),
  "",
  "/memories — what I remember · /facts — what I know about you · /forget <words> — forget something · /reset — fresh conversation (memories stay) · /login — open the web app",
  "/timezone <city> — so reminders and briefs follow your clock, e.g. /timezone Berlin",
].join("\n");

export const HELP = [
  "Commands:",
  "/memories [type] — your recent memories, e.g. /memories book",
  "/facts — what I know about you (your diet, your city, …), numbered, with how sure I am",
  "/forget <words> — forget a memory or a fact, e.g. /forget Dune or /forget vegetarian",
  "/reset — start a fresh conversation; your memories stay",
  "/login — a one-time link to the web app (valid 10 minutes)",
  "/export — everything I keep of you, as a JSON file",
  "/import — bring your memory from ChatGPT or Claude: send their export as a file (then /import go), or /import and your saved memories, one a line; /import alone shows how far it is",
  "/timezone [city or zone] — show or set your timezone, e.g. /timezone Berlin",
  "/reminders — your upcoming reminders, numbered · /cancel <number> — cancel one, e.g. /cancel 2",
  "Anything else you write goes to me directly.",
].join("\n");

/** The menu Telegram shows when a person types "/" in a private chat (npm run telegram:register sets it). */
export const BOT_COMMANDS: ReadonlyArray<{ command: string; description: string }> = [
  { command: "memories", description: "What I remember, newest first (e.g. /memories book)" },
  { command: "facts", description: "What I know about you, with how sure I am" },
  { command: "reminders", description: "Your upcoming reminders, numbered" },
  { command: "cancel", description: "Cancel a reminder by its number (e.g. /cancel 2)" },
  { command: "forget", description: "Forget a memory or a fact (e.g. /forget Dune)" },
  { command: "timezone", description: "Show or set your timezone (e.g. /timezone Berlin)" },
  { command: "login", description: "A one-time link to the web app" },
  { command: "export", description: "Everything I keep of you, as a JSON file" },
  { command: "import", description: "Bring your memory from ChatGPT or Claude" },
  { command: "reset", description: "Start a fresh conversation (memories stay)" },
  { command: "help", description: "What I can do, and every command" },
];

const LOGIN_LINK_TTL_SECONDS = 600;

/** The Mini App's pages a reply can open (worker/routes/mini-app.ts serves them under /tg). */
type MiniAppPage = "" | "memories" | "facts" | "reminders";

/**
 * `text` with a button under it that opens `page` of the Mini App, when the app has an https address
 * (Telegram refuses a Web App button with any other: a local run answers without it).
 */
export function withMiniApp(text: string, appBaseUrl: string | undefined, page: MiniAppPage, label: string): Reply {
  if (!appBaseUrl?.startsWith("https://")) return text;
  return { text, button: { label, url: `${appBaseUrl.replace(/\/+$/, "")}/tg${page ? `/${page}` : ""}` } };
}

export interface CommandContext {
  db: Database;
  userId: string;
  appBaseUrl: string | undefined;
  reset(): Promise<void>;
  /** Starts an import of saved memories pasted after /import (agents/telegram-import.ts). */
  importPasted?(text: string): Promise<string>;
}

/** `/name@bot argument` → { command: "name", argument }; null when `text` is not a command. */
export function parseCommand(text: string): { command: string; argument: string } | null {
  const match = /^\/([a-z_]+)(?:@\w+)?(?:\s+([\s\S]*))?$/i.exec(text.trim());
  return match ? { command: match[1]!.toLowerCase(), argument: (match[2] ?? "").trim() } : null;
}

/** The reply to `text` if it is a command, else null (it goes to the model). */
export async function answerCommand(text: string, context: CommandContext): Promise<Reply | null> {
  const parsed = parseCommand(text);
  if (!parsed) return null;
  const { command, argument } = parsed;
  const { db, userId } = context;

  switch (command) {
    case "start":
      return withMiniApp(WELCOME, context.appBaseUrl, "", "Open my memory");
    case "help":
      return HELP;
    case "reset":
      await context.reset();
      return "Fresh start: I cleared our conversation. Your memories are still here (/memories).";
    case "memories": {
      const type = argument.toLowerCase().replace(/s$/, "") || undefined;
      const items = await db.withUser(userId, (tx) => recentEntities(tx, 30, type));
      if (items.length === 0)
        return type
          ? `I don't remember any ${type}s yet.`
          : "I don't remember anything yet. Tell me about a book you read or a place you visited.";
      const list = [`Your ${type ? `${type}s` : "recent memories"}:`, ...items.map((e) => `• ${e.name} (${e.type})`)].join("\n");
      return withMiniApp(list, context.appBaseUrl, "memories", "See, correct or forget");
    }
    case "forget":
      return forgetCommand(db, userId, argument);
    case "login": {
      if (!context.appBaseUrl) return "The web app is not configured on this server.";
      const token = await createLoginToken(db, userId, LOGIN_LINK_TTL_SECONDS);
      return `Open this link to sign in to the web app (one use, valid 10 minutes):\n${context.appBaseUrl.replace(/\/$/, "")}/auth/link/${token}`;
    }
    case "timezone":
      return timezoneCommand(db, userId, argument);
    case "reminders":
      return withMiniApp(await remindersCommand(db, userId), context.appBaseUrl, "reminders", "Open reminders");
    case "cancel":
      return cancelCommand(db, userId, argument);
    case "facts":
      return withMiniApp(await factsCommand(db, userId, argument), context.appBaseUrl, "facts", "See or correct facts");
    case "export":
      return exportCommand();
    case "import":
      return context.importPasted ? context.importPasted(argument) : "Imports are not available here.";
    default:
      return `I don't know /${command}.\n\n${HELP}`;
  }
}
