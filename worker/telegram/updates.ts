// Messages → the sender's agent. The sender is resolved on the server (first contact creates the
// person) and the message is stored in their agent's durable inbox; the webhook then answers 200.
// Commands, the model turn and every reply happen in the agent, in order, once.
//
// A sender whose account was deleted less than a day ago (db/repositories/auth.ts, tombstones) is
// neither created again nor given an agent: they are told once a minute at most, as the webhook's
// reply, that the account is gone, and a /start they send after the deletion begins a new account.
import { Composer, type Context } from "grammy";
import type { Message } from "grammy/types";
import { parseCommand } from "../../agents/commands/index";
import { readTelegramMessage } from "../../agents/telegram-message";
import type { Telemetry } from "../../platform/telemetry/sinks";
import type { Database } from "../../db/database";
import { AccountDeletedError, claimDeletedNotice, ensureTelegramPerson, reopenTelegramIdentity } from "../../db/repositories/auth";
import { agentFor } from "../agent-routing";

export const DELETED_NOTICE = "Your Soma account was deleted, and everything I remembered with it. Send /start to begin a new one.";

export interface InboxDeps {
  env: Env;
  db: Database;
  telemetry: Telemetry;
}

/**
 * Senders already resolved by this isolate: (Telegram user, chat) → person. A person writing again
 * within a minute costs the webhook no database round trip at all, which keeps the acknowledgement
 * independent of Postgres latency. A changed chat id misses the cache and is written as before. An
 * account deleted through another isolate meanwhile is caught by its agent, which answers "erased".
 */
const KNOWN_SENDER_TTL_MS = 60_000;
const KNOWN_SENDERS_MAX = 10_000;
const knownSenders = new Map<string, { id: string; until: number }>();

/** Forgets a person (account deleted): the next message resolves them again. */
export function forgetSender(personId: string): void {
  for (const [key, value] of knownSenders) if (value.id === personId) knownSenders.delete(key);
}

async function resolveSender(db: Database, account: { telegramUserId: number; chatId: number; displayName: string }) {
  const key = `${account.telegramUserId}:${account.chatId}`;
  const known = knownSenders.get(key);
  if (known && known.until > Date.now()) return { id: known.id, created: false };
  const person = await ensureTelegramPerson(db, account);
  if (knownSenders.size >= KNOWN_SENDERS_MAX) knownSenders.delete(knownSenders.keys().next().value!);
  knownSenders.set(key, { id: person.id, until: Date.now() + KNOWN_SENDER_TTL_MS });
  return person;
}

export function inbox({ env, db, telemetry }: InboxDeps): Composer<Context> {
  const composer = new Composer();
  composer.on("message", async (ctx) => {
    const { message, from } = ctx;
    if (!from || from.is_bot) return;
    const account = {
      telegramUserId: from.id,
      chatId: message.chat.id,
      displayName: [from.first_name, from.last_name].filter(Boolean).join(" "),
    };
    // A second round only when this isolate had the sender cached and their agent says it was erased
    // (the account was deleted through another isolate within the last minute): the database decides then.
    for (let round = 0; round < 2; round++) {
      const person = await personFor(ctx, db, account);
      if (!person) return;
      const agent = await agentFor(env, person.id);
      // Text (or a caption), and what else the message holds: ids and small facts, never a file's bytes.
      const { text, extras } = readTelegramMessage(message);
      const { status } = await agent.enqueueTelegramMessage({
        updateId: ctx.update.update_id,
        chatId: message.chat.id,
        messageId: message.message_id,
        text,
        extras,
        firstContact: person.created,
      });
      if (status !== "erased") {
        if (person.created) telemetry.capture({ event: "user_signed_up", userId: person.id, properties: { channel: "telegram" } });
        telemetry.capture({ event: "message_received", userId: person.id, properties: { channel: "telegram" } });
        return;
      }
      forgetSender(person.id);
    }
  });
  return composer;
}

/**
 * The sender's person, or null when their account was deleted less than a day ago: then they are told
 * so (at most once a minute), unless the message is a /start sent after the deletion, which lifts the
 * tombstone and creates a new person.
 */
async function personFor(
  ctx: Context & { message: Message; from: NonNullable<Context["from"]> },
  db: Database,
  account: Parameters<typeof resolveSender>[1],
) {
  try {
    return await resolveSender(db, account);
  } catch (error) {
    if (!(error instanceof AccountDeletedError)) throw error;
    if (isStart(ctx.message) && (await reopenTelegramIdentity(db, ctx.from.id, sentAt(ctx.message)))) return resolveSender(db, account);
    if (await claimDeletedNotice(db, ctx.from.id)) await ctx.reply(DELETED_NOTICE);
    return null;
  }
}

function isStart(message: Message): boolean {
  return parseCommand(message.text ?? "")?.command === "start";
}

/** When Telegram says the message was sent; the seconds are rounded up, so a /start in the very second of the deletion counts as after it. */
function sentAt(message: Message): Date {
  return new Date(((typeof message.date === "number" ? message.date : 0) + 1) * 1000);
}
