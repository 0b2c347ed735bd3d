// Preloaded into `wrangler dev` by ops/start.ts (NODE_OPTIONS=--require).
// wrangler 4.86 (the last release that runs on Node 20) ships a miniflare whose local Hyperdrive proxy
// opens the database socket without an 'error' listener, so one refused connection crashes the whole
// dev server (later miniflare releases add the listener). This gives exactly those sockets, the ones
// to SOMA_DATABASE_ADDRESS, the missing listener: the Worker then sees a failed connection and
// /api/health says db:false until the database is back.
const net = require("node:net");

const target = process.env.SOMA_DATABASE_ADDRESS;
if (target) {
  const connect = net.connect;
  const guarded = function (...args) {
    const socket = connect.apply(this, args);
    const options = args[0];
    if (options && typeof options === "object" && `${options.host}:${options.port}` === target) {
      socket.on("error", (error) => {
        console.warn(`[soma] database connection failed (${error.code ?? error.message}); reporting db:false until it is back`);
      });
    }
    return socket;
  };
  net.connect = guarded;
  net.createConnection = guarded;
}
