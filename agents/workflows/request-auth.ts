// Inngest's signature on a request to /api/workflows, checked before the SDK parses anything (issue 19,
// finding 1). The SDK (inngest 4.24, InngestCommHandler.handleAsyncRequest) JSON.parses a body first and
// verifies the signature over it after, so an unsigned JSON bomb was built in full before its 401. The
// route checks here what needs no body (a signature present, well formed, its time within Inngest's five
// minutes) before reading a byte, and the body once it has been read under its caps, before serve()
// runs; the SDK then verifies again. The keys are the signing key and, during a key rotation, its
// fallback INNGEST_SIGNING_KEY_FALLBACK (the old key, which Inngest signs with until the new one is
// promoted), tried in that order as the SDK does (RequestSignature.verifySignature).
//
// Over which text: the SDK verifies the HMAC over canonicalize(JSON.parse(body)), RFC 8785's canonical
// JSON (the `canonicalize` package), not over the bytes received. Inngest's executor happens to send the
// canonical form it signed (its driver.MarshalV1 ends in jcs.Transform), so the raw bytes match and cost
// one HMAC; but the SDK accepts any bytes whose canonical form was signed (other key order, spaces,
// escapes), so raw bytes alone would refuse requests the SDK accepts. On a raw mismatch the body (bounded
// by the route's shape limits) is parsed and canonicalized exactly as the SDK does.
import canonicalize from "canonicalize";
import { hmacKey } from "./signature";

/** Inngest's window (the SDK's RequestSignature.hasExpired): five minutes either side of now. */
const SIGNATURE_WINDOW_MS = 5 * 60 * 1000;

/** Why a signature header was refused before the body was read. */
export type HeaderRefusal = "missing" | "malformed" | "expired";

export interface SignatureHeader {
  /** The timestamp as sent: the HMAC covers these characters. */
  timestamp: string;
  mac: Uint8Array<ArrayBuffer>;
}

/** X-Inngest-Signature (`t=<seconds>&s=<hex>`) read and its time checked, or why it is refused. */
export function readSignatureHeader(header: string | undefined, now = Date.now()): SignatureHeader | HeaderRefusal {
  if (!header) return "missing";
  const params = new URLSearchParams(header);
  const timestamp = params.get("t") ?? "";
  const hex = params.get("s") ?? "";
  // Inngest sends decimal seconds and lowercase hex; the SDK compares the hex as text, so no other form passes it.
  if (!/^\d{1,12}$/.test(timestamp) || !/^[0-9a-f]{64}$/.test(hex)) return "malformed";
  if (Math.abs(now - Number(timestamp) * 1000) > SIGNATURE_WINDOW_MS) return "expired";
  const mac = new Uint8Array(32);
  for (let i = 0; i < 32; i++) mac[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return { timestamp, mac };
}

/**
 * Whether `signature` signs `body` with one of `signingKeys` (the key, then a fallback): over the bytes
 * as sent, else over their canonical form as the SDK computes it. `body` must already be bounded.
 */
export async function signsBody(signature: SignatureHeader, body: string, signingKeys: readonly string[]): Promise<boolean> {
  if (await signsText(signature, body, signingKeys)) return true;
  let canonical: string | undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    // The SDK signs a body that parses to a string as that string (signDataWithKey).
    canonical = typeof parsed === "string" ? parsed : canonicalize(parsed);
  } catch {
    return false; // not JSON: nothing the SDK could verify either
  }
  return canonical !== undefined && canonical !== body && signsText(signature, canonical, signingKeys);
}

const encoder = new TextEncoder();
const keys = new Map<string, ReturnType<typeof hmacKey>>();

async function signsText(signature: SignatureHeader, text: string, signingKeys: readonly string[]): Promise<boolean> {
  const data = encoder.encode(text + signature.timestamp);
  for (const signingKey of signingKeys) {
    const key = keys.get(signingKey) ?? hmacKey(signingKey, "verify");
    keys.set(signingKey, key);
    // verify compares in constant time.
    if (await crypto.subtle.verify("HMAC", await key, signature.mac, data)) return true;
  }
  return false;
}
