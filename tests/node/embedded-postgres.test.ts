// The embedded Postgres serves many clients on one PGlite session: a client's exchange must run whole
// even when TCP splits it, or another client's statement in between replaces the unnamed portal.
import { mkdtempSync, statSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import postgres from "postgres";
import { afterAll, describe, expect, it } from "vitest";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../../ops/embedded-postgres";

let database: EmbeddedPostgres | undefined;
afterAll(async () => database?.stop());

/** One wire-protocol message: type byte, int32 length (itself included), body. */
function message(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0);
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}
const cstring = (text: string) => Buffer.from(`${text}\0`);
const int16 = (n: number) => Buffer.from([n >> 8, n & 0xff]);
const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

/** What came back for a startup that names `user`, and whether the server asked for a password. */
function startupAnswer(port: number, parameters: Array<[string, string]>): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("error", reject);
    socket.once("connect", () => {
      const startup = Buffer.concat([int32(196608), ...parameters.flatMap(([k, v]) => [cstring(k), cstring(v)]), Buffer.from([0])]);
      socket.write(Buffer.concat([int32(startup.length + 4), startup]));
    });
    socket.once("data", (data) => {
      socket.destroy();
      resolve(data[0] === 0x52 ? "password asked" : data.toString("latin1"));
    });
  });
}

/** The superuser's password, as the server's URL carries it. */
const passwordOf = (server: EmbeddedPostgres) => decodeURIComponent(new URL(server.url).password);

/** A raw client (the superuser, signed in with its password) that reads until ReadyForQuery ('Z') and returns what came back. */
function rawClient(port: number): Promise<{ socket: Socket; untilReady: () => Promise<Buffer> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let received = Buffer.alloc(0);
    let waiter: (() => void) | undefined;
    socket.on("data", (data) => {
      received = Buffer.concat([received, data]);
      waiter?.();
    });
    const untilReady = () =>
      new Promise<Buffer>((done) => {
        const check = () => {
          // ReadyForQuery is 'Z', length 5, status byte: the last 6 bytes of an exchange.
          if (received.length >= 6 && received[received.length - 6] === 0x5a) {
            const all = received;
            received = Buffer.alloc(0);
            waiter = undefined;
            done(all);
          }
        };
        waiter = check;
        check();
      });
    socket.once("error", reject);
    socket.once("connect", async () => {
      const startup = Buffer.concat([
        int32(196608),
        cstring("user"),
        cstring("postgres"),
        cstring("database"),
        cstring("postgres"),
        Buffer.from([0]),
      ]);
      socket.write(Buffer.concat([int32(startup.length + 4), startup]));
      // AuthenticationCleartextPassword ('R'), then the password message.
      await new Promise<void>((asked) => {
        const check = () => {
          if (received.length >= 9 && received[0] === 0x52) {
            received = Buffer.alloc(0);
            asked();
          } else waiter = check;
        };
        check();
      });
      socket.write(message("p", cstring(passwordOf(database!))));
      await untilReady();
      resolve({ socket, untilReady });
    });
  });
}

describe("the embedded Postgres", () => {
  it("runs a client's exchange whole when TCP splits it, whatever other clients send meanwhile", async () => {
    database = await startEmbeddedPostgres();
    const a = await rawClient(database.port);
    const b = postgres(database.url, { max: 1, onnotice: () => {} });
    // Client A: Parse + Bind of the unnamed statement and portal in one packet…
    a.socket.write(
      Buffer.concat([
        message("P", Buffer.concat([cstring(""), cstring("select 41 + 1 as answer"), int16(0)])),
        message("B", Buffer.concat([cstring(""), cstring(""), int16(0), int16(0), int16(0)])),
      ]),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    // …another client's statements run meanwhile (they replace the unnamed statement and portal)…
    expect(await b`select ${"other"}::text as other`).toEqual([{ other: "other" }]);
    // …then A's Execute + Sync in a second packet.
    a.socket.write(Buffer.concat([message("E", Buffer.concat([cstring(""), int32(0)])), message("S", Buffer.alloc(0))]));
    const reply = await a.untilReady();
    expect(reply.includes(Buffer.from("does not exist"))).toBe(false);
    expect(reply[0]).not.toBe(0x45); // no ErrorResponse
    expect(reply.includes(Buffer.from("42"))).toBe(true); // the DataRow with the answer
    a.socket.destroy();
    await b.end();
  });

  it("holds the session for a client from its Parse to its Sync, even against a client of another role", async () => {
    database ??= await startEmbeddedPostgres();
    const owner = postgres(database.url, { max: 1, onnotice: () => {} });
    await owner`create role embedded_other login password 'other-password'`.catch(() => {});
    await owner.end();
    const a = await rawClient(database.port);
    const otherUrl = new URL(database.url);
    otherUrl.username = "embedded_other";
    otherUrl.password = "other-password";
    const other = postgres(otherUrl.href, { max: 1, onnotice: () => {}, prepare: false });
    // Client A (postgres): Parse + Flush, as postgres.js sends a statement it must describe first; it
    // waits for the answer before sending Bind, Execute and Sync.
    a.socket.write(
      Buffer.concat([
        message("P", Buffer.concat([cstring(""), cstring("select 41 + 1 as answer"), int16(0)])),
        message("H", Buffer.alloc(0)),
      ]),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    // A client of another role asks meanwhile: switching the session to it (a simple query) would
    // destroy A's unnamed statement, so it waits for A's Sync.
    const waiting = other`select current_user as who`.execute();
    await new Promise((resolve) => setTimeout(resolve, 300));
    a.socket.write(
      Buffer.concat([
        message("B", Buffer.concat([cstring(""), cstring(""), int16(0), int16(0), int16(0)])),
        message("E", Buffer.concat([cstring(""), int32(0)])),
        message("S", Buffer.alloc(0)),
      ]),
    );
    const reply = await a.untilReady();
    expect(reply.includes(Buffer.from("does not exist"))).toBe(false);
    expect(reply.includes(Buffer.from("42"))).toBe(true);
    expect(await waiting).toEqual([{ who: "embedded_other" }]);
    a.socket.destroy();
    await other.end();
  });

  it("lets no one in without a user and that user's password (issue 19, finding 5)", async () => {
    database ??= await startEmbeddedPostgres();
    expect(await startupAnswer(database.port, [["database", "postgres"]])).toMatch(/no user name given/);
    expect(await startupAnswer(database.port, [["user", "postgres"]])).toBe("password asked");
    const url = new URL(database.url);
    url.password = "postgres";
    const guess = postgres(url.href, { max: 1, onnotice: () => {} });
    await expect(guess`select 1`).rejects.toThrow(/password authentication failed/);
    await guess.end();
    const owner = postgres(database.url, { max: 1, onnotice: () => {} });
    await owner`create role embedded_no_password login`.catch(() => {});
    await owner.end();
    url.username = "embedded_no_password";
    url.password = "";
    const trusted = postgres(url.href, { max: 1, onnotice: () => {} });
    await expect(trusted`select 1`).rejects.toThrow(/has no password/);
    await trusted.end();
  });

  it("keeps the superuser's random password beside its data, readable by its owner only, across restarts", async () => {
    const dataDir = mkdtempSync(`${tmpdir()}/soma-embedded-`);
    const first = await startEmbeddedPostgres({ dataDir });
    const password = passwordOf(first);
    await first.stop();
    expect(password).toMatch(/^[\w-]{32}$/);
    expect(statSync(`${dataDir}.password`).mode & 0o777).toBe(0o600);
    const again = await startEmbeddedPostgres({ dataDir });
    try {
      expect(passwordOf(again)).toBe(password);
      const sql = postgres(again.url, { max: 1, onnotice: () => {} });
      expect(await sql`select current_user as who`).toEqual([{ who: "postgres" }]);
      await sql.end();
    } finally {
      await again.stop();
    }
  });
});
