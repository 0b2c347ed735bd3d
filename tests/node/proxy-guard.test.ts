// The local Hyperdrive proxy of wrangler 4.86's miniflare pipes workerd's socket and the database's
// into each other with no 'error' listener on either. When workerd resets a connection mid-query, the
// read error is re-thrown by the pipe and kills the Node process hosting the proxy: `npm start`'s
// wrangler dev, or the vitest process of `npm test` (seen in CI: `Error: read ECONNRESET … Emitted
// 'error' event on Socket instance at: Socket.onerror`). Each case runs in its own Node process with
// miniflare's connection handler as shipped (HyperdriveProxyController#handleConnection, sslmode off).
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";

const guard = new URL("../../ops/wrangler-guard.cjs", import.meta.url).pathname;

/** Runs the proxy, resets one client connection mid-exchange, and reports whether the process lived. */
function resetThroughProxy(guarded: boolean): Promise<{ code: number | null; output: string }> {
  const program = `
    const net = require("node:net");
    ${guarded ? `` : `// no guard`}
    const database = net.createServer((socket) => socket.on("data", () => {}));
    database.listen(0, "127.0.0.1", () => {
      const target = database.address();
      ${guarded ? `require(${JSON.stringify(guard)}).guardLocalProxies("127.0.0.1:" + target.port, () => {});` : ""}
      // miniflare 4.20260426: HyperdriveProxyController.createProxyServer + #handleConnection
      const proxy = net.createServer((clientSocket) => {
        const dbSocket = net.connect({ host: "127.0.0.1", port: target.port });
        clientSocket.pipe(dbSocket);
        dbSocket.pipe(clientSocket);
      });
      proxy.listen(0, "127.0.0.1", () => {
        const client = net.connect(proxy.address().port, "127.0.0.1", () => {
          client.write("a query workerd gives up on");
          setTimeout(() => client.resetAndDestroy(), 50);
        });
        setTimeout(() => { console.log("alive"); process.exit(0); }, 500);
      });
    });`;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["-e", program], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (data) => (output += data));
    child.stderr.on("data", (data) => (output += data));
    child.on("close", (code) => resolve({ code, output }));
  });
}

describe("the local Hyperdrive proxy", () => {
  it("as shipped, dies of one connection workerd resets (the failure the guard exists for)", async () => {
    const { code, output } = await resetThroughProxy(false);
    expect(code).not.toBe(0);
    expect(output).toMatch(/ECONNRESET/);
    expect(output).not.toMatch(/alive/);
  });

  it("guarded, closes that one connection and keeps serving", async () => {
    const { code, output } = await resetThroughProxy(true);
    expect(output).toMatch(/alive/);
    expect(code).toBe(0);
  });
});
