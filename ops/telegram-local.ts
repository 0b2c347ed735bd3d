// `npm run telegram:local`: Soma's Telegram side in this terminal, with no bot, no token and no network.
// It is `npm start` (same state in .soma, same PORT) with a Bot API of its own on 127.0.0.1 standing in
// for Telegram: `telegram:register` sets the webhook there as it would at Telegram, each line typed
// here goes to that webhook as a private message from you (signed with the webhook secret, as Telegram
// signs it), and what the bot sends back (sendMessage, editMessageText) is printed. Everything between
// is Soma's real path: the webhook route, the per-person agent's inbox, the model turn and its memory
// tools, the reply's Telegram HTML. Ctrl-C (or the end of input) stops it all.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { buildForStart, start } from "./start";
import { registerWebhook } from "./telegram";

const COMMAND = "npm run telegram:local";
/** The token the local Bot API answers to; no real bot has it (Telegram's tokens are id:secret). */
const LOCAL_TOKEN = "0:local";
/** You, as Telegram would name you: one private chat, the same on every run (so Soma remembers you). */
const LOCAL_CHAT = { id: 700_000_001, type: "private", first_name: "You" } as const;

interface LocalBotApi {
  url: string;
  /** Sends `text` as your message to the webhook Soma registered; its HTTP status. */
  say(text: string): Promise<number>;
  close(): Promise<void>;
}

/** A Telegram message's HTML as a terminal shows it: tags dropped, entities read. */
export function plainText(html: string): string {
  return html
    .replace(/<br\s*\/?>/g, "\n")
    .replace(/<[^>]+>/g, "")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&");
}

/** A request's JSON body, or nothing when it is not JSON. */
function parsed(body: string): unknown {
  try {
    return body ? JSON.parse(body) : {};
  } catch {
    return {};
  }
}

/** The buttons under a message, as `[text]`. */
function buttonsOf(markup: unknown): string {
  const rows = (markup as { inline_keyboard?: Array<Array<{ text?: string }>> } | undefined)?.inline_keyboard ?? [];
  const labels = rows.flat().map((button) => `[${button.text ?? ""}]`);
  return labels.length ? `\n${labels.join(" ")}` : "";
}

/** The Bot API on 127.0.0.1: what Soma sends is shown with `show`; updates go to the webhook it set. */
async function localBotApi(show: (text: string) => void): Promise<LocalBotApi> {
  let webhook: { url: string; secret: string } | undefined;
  let messageId = 0;
  // Increasing across runs, as Telegram's are: Soma answers each update_id once.
  let updateId = Date.now();
  const reply = (res: ServerResponse, result: unknown) => {
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true, result }));
  };
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const method = new URL(req.url ?? "/", "http://local").pathname.split("/").pop() ?? "";
    let body = "";
    for await (const chunk of req) body += chunk;
    // JSON, except a file sent as multipart form data (an export): only its being a file is shown.
    const payload = (req.headers["content-type"]?.includes("application/json") ? parsed(body) : {}) as Record<string, unknown>;
    // Telegram HTML read as text; a message without parse_mode is its text as it is ("/forget <words>").
    const shown = (text: unknown) => (payload.parse_mode === "HTML" ? plainText(String(text ?? "")) : String(text ?? ""));
    const message = () => ({ message_id: ++messageId, date: Math.floor(Date.now() / 1000), chat: LOCAL_CHAT, text: payload.text });
    switch (method) {
      case "setWebhook":
        webhook = { url: String(payload.url), secret: String(payload.secret_token ?? "") };
        return reply(res, true);
      case "getWebhookInfo":
        return reply(res, { url: webhook?.url ?? "", has_custom_certificate: false, pending_update_count: 0 });
      case "getMe":
        return reply(res, { id: 1, is_bot: true, first_name: "Soma", username: "soma_local_bot", can_join_groups: false });
      case "sendMessage":
        show(`${shown(payload.text)}${buttonsOf(payload.reply_markup)}`);
        return reply(res, message());
      case "editMessageText":
        show(`(edited) ${shown(payload.text)}`);
        return reply(res, message());
      case "sendDocument":
        show(`(a file${typeof payload.caption === "string" ? `: ${shown(payload.caption)}` : ""})`);
        return reply(res, { ...message(), text: undefined });
      default:
        // Typing…, drafts as they stream, commands, the menu button: nothing to show.
        return reply(res, true);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    async say(text) {
      if (!webhook) throw new Error("no webhook is set: telegram:register did not reach this Bot API");
      const update = {
        update_id: ++updateId,
        message: {
          message_id: ++messageId,
          date: Math.floor(Date.now() / 1000),
          chat: LOCAL_CHAT,
          from: { id: LOCAL_CHAT.id, is_bot: false, first_name: "You" },
          text,
        },
      };
      const response = await fetch(webhook.url, {
        method: "POST",
        headers: { "content-type": "application/json", "X-Telegram-Bot-Api-Secret-Token": webhook.secret },
        body: JSON.stringify(update),
      });
      await response.body?.cancel();
      return response.status;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function main(): Promise<void> {
  // `--no-build`: the web app as it was last built (npm run build:web), as the tests run it.
  if (!process.argv.includes("--no-build")) await buildForStart(process.env, COMMAND);
  // Made once Soma answers: lines typed (or piped) meanwhile wait in stdin until then.
  let rl: ReturnType<typeof createInterface> | undefined;
  const show = (text: string) => {
    process.stdout.write(`\r${text.replace(/^/gm, "soma › ")}\n`);
    rl?.prompt(true);
  };
  const api = await localBotApi(show);
  const secret = randomBytes(24).toString("base64url");
  const running = await start(
    {
      ...process.env,
      TELEGRAM_API_ROOT: api.url,
      TELEGRAM_BOT_TOKEN: LOCAL_TOKEN,
      TELEGRAM_WEBHOOK_SECRET: secret,
      TELEGRAM_BOT_USERNAME: "soma_local_bot",
    },
    console.log,
    COMMAND,
  );
  // Soma runs in its own process group: stopped here if what follows fails, never left behind.
  await registerWebhook(
    { APP_BASE_URL: running.url, TELEGRAM_BOT_TOKEN: LOCAL_TOKEN, TELEGRAM_WEBHOOK_SECRET: secret, TELEGRAM_API_ROOT: api.url },
    () => {},
  ).catch(async (error: unknown) => {
    await running.stop();
    await api.close();
    throw error;
  });
  console.log("\nTelegram, played here: type a message (try /start, then “I just finished reading Dune”). Ctrl-C stops.");
  rl = createInterface({ input: process.stdin, output: process.stdout, prompt: "you  › " });
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      rl?.close();
      await running.stop();
      await api.close();
      process.exit(0);
    })());
  rl.on("line", (line) => {
    const text = line.trim();
    if (!text) return rl?.prompt();
    api.say(text).then(
      (status) => status === 200 || show(`(the webhook answered ${status})`),
      (error: unknown) => show(`(the webhook did not answer: ${error instanceof Error ? error.message : String(error)})`),
    );
  });
  // The end of input (a piped script) leaves the last replies time to arrive; Ctrl-C stops at once.
  rl.on("close", () => void (stopping ? undefined : setTimeout(stop, 5_000)));
  process.once("SIGINT", () => void stop());
  process.once("SIGTERM", () => void stop());
  void running.exited.then(() => stop());
  rl.prompt();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((error: unknown) => {
    console.error(`telegram:local failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
