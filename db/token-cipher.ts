// OAuth tokens at rest: AES-GCM-256 with TOKEN_ENCRYPTION_KEY (32 random bytes, base64). Stored as
// "v1.<iv>.<ciphertext>" in base64url, so a key rotation can add "v2" without guessing formats.

const VERSION = "v1";

export class TokenCipher {
  readonly #key: ReturnType<typeof crypto.subtle.importKey>;

  constructor(base64Key: string) {
    const raw = Uint8Array.from(atob(base64Key), (c) => c.charCodeAt(0));
    if (raw.length !== 32) throw new Error("TOKEN_ENCRYPTION_KEY must be 32 bytes, base64-encoded");
    this.#key = crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]);
  }

  async encrypt(plaintext: string): Promise<string> {
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv }, await this.#key, new TextEncoder().encode(plaintext));
    return [VERSION, base64url(iv), base64url(new Uint8Array(sealed))].join(".");
  }

  async decrypt(stored: string): Promise<string> {
    const [version, iv, sealed] = stored.split(".");
    if (version !== VERSION || !iv || !sealed) throw new Error("not a sealed token");
    const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: fromBase64url(iv) }, await this.#key, fromBase64url(sealed));
    return new TextDecoder().decode(plain);
  }
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function fromBase64url(text: string): Uint8Array {
  const padded = text.replaceAll("-", "+").replaceAll("_", "/") + "===".slice((text.length + 3) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}
