// OAuth tokens at rest: AES-GCM-256 with TOKEN_ENCRYPTION_KEY (32 random bytes, base64), stored as
// "<version>.<iv>.<ciphertext>" in base64url.
//   v2  the additional authenticated data names the token's place (person, provider, column), so a
//       sealed token copied into another person's row, or into the other column, fails to open there.
//   v1  legacy, sealed without AAD: still opened, and re-sealed as v2 on its first read
//       (openConnection in db/repositories/connections.ts). Nothing writes v1 any more.

const CURRENT = "v2";
const LEGACY = "v1";

/** Where a sealed token belongs: it opens only for the same person, provider and column. */
export interface TokenSlot {
  userId: string;
  provider: string;
  column: "access_token" | "refresh_token";
}

/** A stored token that does not open for its slot: retrying will not change that. */
export class SealedTokenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SealedTokenError";
  }
}

export class TokenCipher {
  readonly #key: ReturnType<typeof crypto.subtle.importKey>;

  constructor(base64Key: string) {
    const raw = Uint8Array.from(atob(base64Key), (c) => c.charCodeAt(0));
    if (raw.length !== 32) throw new Error("TOKEN_ENCRYPTION_KEY must be 32 bytes, base64-encoded");
    this.#key = crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]);
  }

  /** Seals `plaintext` for `slot` (v2). */
  async encrypt(plaintext: string, slot: TokenSlot): Promise<string> {
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const sealed = await crypto.subtle.encrypt(
      { name: "AES-GCM", iv, additionalData: slotData(slot) },
      await this.#key,
      new TextEncoder().encode(plaintext),
    );
    return [CURRENT, base64url(iv), base64url(new Uint8Array(sealed))].join(".");
  }

  /** Opens a token sealed for `slot`; throws when it was sealed for another place or tampered with. */
  async decrypt(stored: string, slot: TokenSlot): Promise<string> {
    const [version, iv, sealed, extra] = stored.split(".");
    if ((version !== CURRENT && version !== LEGACY) || !iv || !sealed || extra !== undefined)
      throw new SealedTokenError("not a sealed token");
    const params = { name: "AES-GCM", iv: fromBase64url(iv), ...(version === CURRENT ? { additionalData: slotData(slot) } : {}) };
    try {
      return new TextDecoder().decode(await crypto.subtle.decrypt(params, await this.#key, fromBase64url(sealed)));
    } catch {
      // The message never names the slot or the value: errors can travel to logs and Sentry.
      throw new SealedTokenError(`the sealed ${slot.column} does not open here (another key, another row, or tampered with)`);
    }
  }

  /** True for a token sealed before v2 (no AAD), which should be re-sealed for its slot. */
  static isLegacy(stored: string): boolean {
    return stored.startsWith(`${LEGACY}.`);
  }
}

function slotData(slot: TokenSlot): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(["soma.oauth-token", CURRENT, slot.userId, slot.provider, slot.column]));
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
}

function fromBase64url(text: string): Uint8Array {
  const padded = text.replaceAll("-", "+").replaceAll("_", "/") + "===".slice((text.length + 3) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}
