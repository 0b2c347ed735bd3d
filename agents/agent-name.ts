// An agent's name (the person's id) across wakes. An alarm can wake a Durable Object without its name:
// wrangler dev's workerd keeps an alarm by object id alone, so after a restart `ctx.id.name` is missing
// and the agents SDK refuses to start the object (every later request to it failed too, while the
// failing alarm kept it alive). The SDK falls back to a storage key; writing it once, whenever the name
// is known, makes every wake find it (agents/user-agent.ts calls both on start and on each alarm).

/** Where the agents SDK looks for an object's name when the runtime does not give it. */
const NAME_KEY = "__ps_name";

/** Keeps the object's name where the SDK falls back to it, when the runtime gave it and it is not there yet. */
export async function keepName(ctx: DurableObjectState): Promise<void> {
  const name = ctx.id.name;
  if (name !== undefined && (await ctx.storage.get(NAME_KEY)) !== name) await ctx.storage.put(NAME_KEY, name);
}

/** Whether the object was woken with no way to learn its name (it then cannot serve anyone). */
export async function nameless(ctx: DurableObjectState): Promise<boolean> {
  return ctx.id.name === undefined && (await ctx.storage.get(NAME_KEY)) === undefined;
}
