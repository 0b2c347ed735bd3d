// A stand-in of a browser's push service (RFC 8030), strict as the real ones: over https (with a
// certificate the test makes, its CA handed to the Worker with NODE_EXTRA_CA_CERTS), it checks each
// message's VAPID (RFC 8292: `vapid t=<ES256 JWT>, k=<key>`, `aud` the endpoint's origin, `exp` within
// 24 h, `sub` a mailto: or https: URL, signed by the key named), its TTL, and decrypts its aes128gcm body
// (RFC 8291) with the keys of the subscription, as the browser would. Devices it serves: created by the
// test, each answering 201, or 410 (gone: unsubscribed), or 503 (the service down).
import { execFileSync } from "node:child_process";
import { createDecipheriv, createECDH, createHmac, createPublicKey, randomBytes, verify } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import { tmpdir } from "node:os";

interface PushedMessage {
  device: string;
  ttl: number;
  urgency: string | null;
  topic: string | null;
  /** The decrypted notification (JSON parsed). */
  payload: { title: string; body: string; tag: string; url: string; at: string };
  vapid: { aud: string; exp: number; sub: string; key: string };
}

interface Device {
  id: string;
  answer: 201 | 410 | 503;
  ecdh: ReturnType<typeof createECDH>;
  auth: Buffer;
}

export interface PushService {
  /** The CA file to trust (NODE_EXTRA_CA_CERTS), and its PEM. */
  caFile: string;
  ca: string;
  origin: string;
  /** A new device: its subscription (PushSubscription.toJSON()'s shape), answering `answer`. */
  device(answer?: Device["answer"]): { id: string; endpoint: string; keys: { p256dh: string; auth: string } };
  setAnswer(id: string, answer: Device["answer"]): void;
  messages: PushedMessage[];
  /** Requests it refused, with why. */
  refused: string[];
  stop(): Promise<void>;
}

/** A CA and a certificate for 127.0.0.1 signed by it (openssl), in a new directory. */
function makeCertificates(): { dir: string; caFile: string; key: string; cert: string } {
  const dir = mkdtempSync(`${tmpdir()}/soma-push-tls-`);
  const run = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  run(
    "req",
    "-x509",
    ...ec,
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "2",
    "-subj",
    "/CN=Soma test push CA",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign",
  );
  run("req", ...ec, "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=127.0.0.1");
  writeFileSync(`${dir}/leaf.ext`, "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  run(
    "x509",
    "-req",
    "-in",
    "leaf.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "leaf.pem",
    "-days",
    "2",
    "-extfile",
    "leaf.ext",
  );
  return { dir, caFile: `${dir}/ca.pem`, key: readFileSync(`${dir}/leaf.key`, "utf8"), cert: readFileSync(`${dir}/leaf.pem`, "utf8") };
}

const hmac = (key: Buffer, data: Buffer) => createHmac("sha256", key).update(data).digest();

/** RFC 8291 and RFC 8188: the plaintext of one aes128gcm record for the device's keys. */
function decrypt(body: Buffer, device: Device): Buffer {
  const salt = body.subarray(0, 16);
  const idLength = body[20]!;
  const senderKey = body.subarray(21, 21 + idLength);
  const ciphertext = body.subarray(21 + idLength);
  const secret = device.ecdh.computeSecret(senderKey);
  const keyInfo = Buffer.concat([Buffer.from("WebPush: info\0"), device.ecdh.getPublicKey(), senderKey, Buffer.from([1])]);
  const ikm = hmac(hmac(device.auth, secret), keyInfo);
  const prk = hmac(salt, ikm);
  const cek = hmac(prk, Buffer.from("Content-Encoding: aes128gcm\0\x01")).subarray(0, 16);
  const nonce = hmac(prk, Buffer.from("Content-Encoding: nonce\0\x01")).subarray(0, 12);
  const decipher = createDecipheriv("aes-128-gcm", cek, nonce);
  decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
  const padded = Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - 16)), decipher.final()]);
  // The last record: the data, a 0x02 delimiter, then zeroes.
  const end = padded.lastIndexOf(2);
  if (end < 0 || padded.subarray(end + 1).some((b) => b !== 0)) throw new Error("bad padding");
  return padded.subarray(0, end);
}

/** RFC 8292: the JWT's claims when `authorization` is a valid VAPID header for `origin`; throws otherwise. */
function checkVapid(authorization: string, origin: string): PushedMessage["vapid"] {
  const match = /^vapid t=([\w-]+\.[\w-]+\.[\w-]+), k=([\w-]+)$/.exec(authorization);
  if (!match) throw new Error("not a vapid authorization");
  const [token, key] = [match[1]!, match[2]!];
  const [header, claims, signature] = token.split(".") as [string, string, string];
  if (JSON.parse(Buffer.from(header, "base64url").toString()).alg !== "ES256") throw new Error("not ES256");
  const point = Buffer.from(key, "base64url");
  if (point.length !== 65 || point[0] !== 4) throw new Error("k is not an uncompressed P-256 key");
  const publicKey = createPublicKey({
    key: { kty: "EC", crv: "P-256", x: point.subarray(1, 33).toString("base64url"), y: point.subarray(33).toString("base64url") },
    format: "jwk",
  });
  const signed = verify(
    "sha256",
    Buffer.from(`${header}.${claims}`),
    { key: publicKey, dsaEncoding: "ieee-p1363" },
    Buffer.from(signature, "base64url"),
  );
  if (!signed) throw new Error("the JWT's signature does not verify with k");
  const { aud, exp, sub } = JSON.parse(Buffer.from(claims, "base64url").toString()) as { aud: string; exp: number; sub: string };
  const now = Date.now() / 1000;
  if (aud !== origin) throw new Error(`aud ${aud} is not ${origin}`);
  if (!(exp > now && exp <= now + 24 * 3600)) throw new Error("exp is not within 24 h");
  if (!/^(mailto:|https:\/\/)/.test(sub)) throw new Error("sub is not a mailto: or https: URL");
  return { aud, exp, sub, key };
}

export async function startPushService(): Promise<PushService> {
  const tls = makeCertificates();
  const devices = new Map<string, Device>();
  const messages: PushedMessage[] = [];
  const refused: string[] = [];
  let origin = "";
  const server: Server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const device = devices.get(/^\/push\/([\w-]+)$/.exec(req.url ?? "")?.[1] ?? "");
      const refuse = (status: number, why: string) => {
        refused.push(why);
        res.writeHead(status).end(why);
      };
      if (req.method !== "POST" || !device) return refuse(404, "no such subscription");
      if (device.answer !== 201) return res.writeHead(device.answer).end();
      try {
        const vapid = checkVapid(String(req.headers.authorization ?? ""), origin);
        if (req.headers["content-encoding"] !== "aes128gcm") throw new Error("not aes128gcm");
        const ttl = Number(req.headers.ttl);
        if (!Number.isInteger(ttl) || ttl < 0) throw new Error("no TTL");
        const body = Buffer.concat(chunks);
        if (body.length > 4096) throw new Error("over 4096 bytes");
        const payload = JSON.parse(decrypt(body, device).toString("utf8")) as PushedMessage["payload"];
        const topic = req.headers.topic ? String(req.headers.topic) : null;
        if (topic && !/^[A-Za-z0-9_-]{1,32}$/.test(topic)) throw new Error("a topic past 32 base64url characters");
        messages.push({ device: device.id, ttl, urgency: req.headers.urgency ? String(req.headers.urgency) : null, topic, payload, vapid });
        res.writeHead(201, { location: `/message/${messages.length}` }).end();
      } catch (error) {
        refuse(400, (error as Error).message);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  origin = `https://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  return {
    caFile: tls.caFile,
    ca: readFileSync(tls.caFile, "utf8"),
    origin,
    device(answer = 201) {
      const id = randomBytes(8).toString("hex");
      const ecdh = createECDH("prime256v1");
      ecdh.generateKeys();
      const device: Device = { id, answer, ecdh, auth: randomBytes(16) };
      devices.set(id, device);
      return {
        id,
        endpoint: `${origin}/push/${id}`,
        keys: { p256dh: ecdh.getPublicKey().toString("base64url"), auth: device.auth.toString("base64url") },
      };
    },
    setAnswer(id, answer) {
      const device = devices.get(id);
      if (device) device.answer = answer;
    },
    messages,
    refused,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
