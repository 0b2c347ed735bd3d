// Guards for the local Hyperdrive proxy of the miniflare that wrangler 4.86 (the last release that
// runs on Node 20) ships; later miniflare releases make these changes themselves. The proxy runs in
// whichever Node process hosts miniflare: `wrangler dev` under `npm start` (preloaded by ops/start.ts
// with NODE_OPTIONS=--require, the address in SOMA_DATABASE_ADDRESS) and the vitest process of
// `npm test` (tests/setup/postgres.ts calls guardLocalProxies before the Workers pool starts).
// 1. It opens the database socket without an 'error' listener, so one refused connection crashed the
//    whole process. Sockets to the database address get the missing listener: the Worker then sees
//    a failed connection and /api/health says db:false until the database is back.
// 2. Neither leg of the proxy has an 'error' listener on the side workerd talks to either (it only
//    pipes the two sockets into each other): when workerd drops or resets a connection the proxy is
//    still using (hundreds of agents woken at once after a restart; a test that abandons a query),
//    `EPIPE` or `ECONNRESET` killed the process. Every socket a server of this process accepts gets a
//    listener: a dropped client is logged and closed.
// 3. It leaves Nagle's algorithm on for both legs of the proxy, so every Postgres round trip waited
//    for a delayed ACK (measured: 100–300 ms to resolve a Telegram sender, three statements).
//    Proxy sockets get TCP_NODELAY.
const net = require("node:net");

let guarded = false;

/** @param {string} databaseAddress "host:port" of the database the proxy forwards to */
function guardLocalProxies(databaseAddress, log = console.warn) {
  if (guarded) return;
  guarded = true;
  const connect = net.connect;
  const guardedConnect = function (...args) {
    const socket = connect.apply(this, args);
    const options = args[0];
    if (options && typeof options === "object" && `${options.host}:${options.port}` === databaseAddress) {
      socket.setNoDelay(true);
      socket.on("error", (error) => {
        log(`[soma] database connection failed (${error.code ?? error.message}); reporting db:false until it is back`);
      });
    }
    return socket;
  };
  net.connect = guardedConnect;
  net.createConnection = guardedConnect;

  const createServer = net.createServer;
  net.createServer = function (...args) {
    const server = createServer.apply(this, args);
    server.on("connection", (socket) => {
      socket.setNoDelay(true);
      socket.on("error", (error) => {
        log(`[soma] a local connection was dropped (${error.code ?? error.message})`);
        socket.destroy();
      });
    });
    return server;
  };
}

module.exports = { guardLocalProxies };

if (process.env.SOMA_DATABASE_ADDRESS) guardLocalProxies(process.env.SOMA_DATABASE_ADDRESS);
