// `npm run push:keys`: a fresh VAPID key pair for Web Push (RFC 8292), printed as the two lines of
// .env.example they go to (VAPID_PUBLIC_KEY, VAPID_PRIVATE_KEY). npm start makes one pair for its state
// directory at first start and keeps it (localVapidKeys), like the embedded Postgres password: a browser
// subscribed to it stays subscribed across restarts.
import type { webcrypto } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { runMain } from "./cli";

export interface VapidKeys {
  publicKey: string;
  privateKey: string;
}

/** A new P-256 key pair: the public key uncompressed (0x04‖x‖y) and the private scalar d, both base64url. */
export async function generateVapidKeys(): Promise<VapidKeys> {
  const pair = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ])) as webcrypto.CryptoKeyPair;
  const jwk = await crypto.subtle.exportKey("jwk", pair.privateKey);
  const point = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, "base64url"), Buffer.from(jwk.y!, "base64url")]);
  return { publicKey: point.toString("base64url"), privateKey: jwk.d! };
}

/** The state directory's key pair, made at its first start. */
export async function localVapidKeys(stateDir: string): Promise<VapidKeys> {
  const file = `${stateDir}/vapid.json`;
  if (existsSync(file)) return JSON.parse(readFileSync(file, "utf8")) as VapidKeys;
  const keys = await generateVapidKeys();
  writeFileSync(file, JSON.stringify(keys), { mode: 0o600 });
  return keys;
}

runMain(import.meta, async () => {
  const keys = await generateVapidKeys();
  console.log(`VAPID_PUBLIC_KEY=${keys.publicKey}`);
  console.log(`VAPID_PRIVATE_KEY=${keys.privateKey}`);
  return 0;
});
