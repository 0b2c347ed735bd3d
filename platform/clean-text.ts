// Text that every store and every model accepts. Postgres `text` refuses NUL, and JSON with half of a
// surrogate pair (a `\ud800` escape) is refused by jsonb; neither carries meaning for a person.

/** Half of a surrogate pair with no other half next to it. */
export const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** The first `length` UTF-16 units of `text`, never ending in half a surrogate pair. */
export function cut(text: string, length: number): string {
  const head = text.slice(0, length);
  return /[\ud800-\udbff]$/.test(head) ? head.slice(0, -1) : head;
}
