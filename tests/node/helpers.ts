// Shared helpers for the Node suites.
import { createServer } from "node:net";

/**
 * The ports one `npm start` listens on: the Worker's and the DevTools inspector's. Left to itself, wrangler
 * takes 9229 for the inspector when it looks free, so two files starting services at once both chose it and
 * one failed with "Address already in use (socket direct:1:default)" (a CI run).
 */
export async function servicePorts(): Promise<{ PORT: string; SOMA_INSPECTOR_PORT: string }> {
  const port = await freePort();
  let inspector = await freePort();
  while (inspector === port) inspector = await freePort();
  return { PORT: String(port), SOMA_INSPECTOR_PORT: String(inspector) };
}

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
export async function freePort(): Promise<number> {
  // Below Linux's ephemeral range (32768–60999): a port the kernel handed out (listen(0)) is free only
  // until it hands the same one to an outgoing connection, and a service then bound there fails with
  // "Address already in use" (seen once in a CI run). Random, so that files starting services at once differ.
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const server = createServer();
    const bound = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(port, "127.0.0.1", () => resolve(true));
    });
    if (!bound) continue;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
  }
}
