// Inngest's request signature (X-Inngest-Signature: t=<seconds>&s=<hex>): HMAC-SHA256 over the body
// and the timestamp, keyed with the signing key minus its "signkey-<env>-" prefix. Inngest signs its
// calls to /api/workflows this way; the smoke check signs its introspection the same way. Checking one
// before the body is parsed is request-auth.ts's.
const encoder = new TextEncoder();

/** The signing key as Inngest and its SDK use it for the HMAC: without the "signkey-<env>-" prefix. */
export function hmacKey(signingKey: string, usage: "sign" | "verify") {
  return crypto.subtle.importKey("raw", encoder.encode(signingKey.replace(/^signkey-\w+-/, "")), { name: "HMAC", hash: "SHA-256" }, false, [
    usage,
  ]);
}

export async function inngestSignature(body: string, signingKey: string, at = new Date()): Promise<string> {
  const ts = Math.floor(at.getTime() / 1000);
  const mac = await crypto.subtle.sign("HMAC", await hmacKey(signingKey, "sign"), encoder.encode(body + ts));
  return `t=${ts}&s=${[...new Uint8Array(mac)].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}
