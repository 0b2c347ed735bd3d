// Shared helpers for the Node suites.
import { createServer } from "node:net";

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
