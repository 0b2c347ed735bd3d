// Preloaded into `wrangler dev` by ops/start.ts (NODE_OPTIONS=--require). Two fixes for the local
// Hyperdrive proxy of the miniflare that wrangler 4.86 (the last release that runs on Node 20) ships;
// later miniflare releases make both changes themselves:
// 1. It opens the database socket without an 'error' listener, so one refused connection crashed the
//    whole dev server. Sockets to SOMA_DATABASE_ADDRESS get the missing listener: the Worker then sees
//    a failed connection and /api/health says db:false until the database is back.
// 2. Neither leg of the proxy has an 'error' listener on the side workerd talks to either: when
//    workerd drops a connection the proxy is still writing to (hundreds of agents woken at once after
//    a restart), `EPIPE … This socket has been ended by the other party` killed the dev server. Every
//    socket a server of this process accepts gets a listener: a dropped client is logged and closed.
// 3. It leaves Nagle's algorithm on for both legs of the proxy, so every Postgres round trip waited
//    for a delayed ACK (measured: 100–300 ms to resolve a Telegram sender, three statements).
//    Proxy sockets get TCP_NODELAY.
const net = require("node:net");

const target = process.env.SOMA_DATABASE_ADDRESS;
if (target) {
  const connect = net.connect;
  const guarded = function (...args) {
    const socket = connect.apply(this, args);
    const options = args[0];
    if (options && typeof options === "object" && `${options.host}:${options.port}` === target) {
      socket.setNoDelay(true);
      socket.on("error", (error) => {
        console.warn(`[soma] database connection failed (${error.code ?? error.message}); reporting db:false until it is back`);
      });
    }
    return socket;
  };
  net.connect = guarded;
  net.createConnection = guarded;

  const createServer = net.createServer;
  net.createServer = function (...args) {
    const server = createServer.apply(this, args);
    server.on("connection", (socket) => {
      socket.setNoDelay(true);
      socket.on("error", (error) => {
        console.warn(`[soma] a local connection was dropped (${error.code ?? error.message})`);
        socket.destroy();
      });
    });
    return server;
  };
}
