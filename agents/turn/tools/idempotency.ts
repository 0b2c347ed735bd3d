// Idempotency keys for the writes a turn makes. A turn that is re-run after a crash (its message was
// stored, it ran partly or fully, no reply was recorded) answers the same source message again and the
// model calls the same tools with the same arguments: keyed by source message + tool + arguments, each
// write then finds the row it already made instead of adding a second reminder or edge.
import type { SourceRef } from "../../../db/repositories/memory";

/**
 * SHA-256 hex of [source kind, source external id, tool name, arguments] as canonical JSON. The JSON
 * array keeps the parts apart (no "a:b"+"c" = "a"+"b:c" collisions); the key is scoped per person by
 * the unique indexes, which include user_id.
 */
export async function idempotencyKey(source: Pick<SourceRef, "kind" | "externalId">, tool: string, args: unknown): Promise<string> {
  const text = canonicalJson([source.kind, source.externalId, tool, args]);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * JSON with object keys sorted at every depth, so equal arguments give equal text whatever order the
 * model (or zod) produced them in. Follows JSON.stringify otherwise: undefined members are dropped,
 * undefined in arrays becomes null, dates become their ISO text.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sorted(value)) ?? "null";
}

function sorted(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map((item) => (item === undefined ? null : sorted(item)));
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const member = (value as Record<string, unknown>)[key];
    if (member !== undefined) out[key] = sorted(member);
  }
  return out;
}
