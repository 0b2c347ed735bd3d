// Messages → the sender's agent. The sender is resolved on the server (first contact creates the
// person) and the message is stored in their agent's durable inbox; the webhook then answers 200.
// Commands, the model turn and every reply happen in the agent, in order, once.
import { Composer, type Context } from "grammy";
import type { Telemetry } from "../../agents/telemetry/sinks";
import type { Database } from "../../db/database";
import { ensureTelegramPerson } from "../../db/repositories/auth";
import { agentFor } from "../agent-routing";

export interface InboxDeps {
  env: Env;
  db: Database;
  telemetry: Telemetry;
}

export function inbox({ env, db, telemetry }: InboxDeps): Composer<Context> {
  const composer = new Composer();
  composer.on("message", async (ctx) => {
    const { message, from } = ctx;
    if (!from || from.is_bot) return;
    const person = await ensureTelegramPerson(db, {
      telegramUserId: from.id,
      chatId: message.chat.id,
      displayName: [from.first_name, from.last_name].filter(Boolean).join(" "),
    });
    if (person.created) telemetry.capture({ event: "user_signed_up", userId: person.id, properties: { channel: "telegram" } });
    telemetry.capture({ event: "message_received", userId: person.id, properties: { surface: "telegram" } });
    const agent = await agentFor(env, person.id);
    await agent.enqueueTelegramMessage({
      updateId: ctx.update.update_id,
      chatId: message.chat.id,
      messageId: message.message_id,
      text: message.text ?? message.caption ?? "",
      firstContact: person.created,
    });
  });
  return composer;
}
