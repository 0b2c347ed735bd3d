// Names as keys: the uniqueness key of a name (normalizeName: "“Dune”." and "dune" are one entity)
// and its search key: its normalized form (lowercase, NFKC) with accents and the
// like folded away, so "Cien años" is found by "cien anos" and "Ёлка" by "елка". One mapping, used
// twice: by Postgres (entities.search_name and the full-text vector are generated with translate(),
// db/schema.ts) and by the recall query in TypeScript (foldForSearch) — the two must agree, which is
// why the characters are listed here and nowhere else. translate() needs no extension (unaccent is
// not on every managed Postgres) and is immutable, so a generated column may use it. Letters with no
// one-letter fold (ß, æ, œ) stay as they are; cases never differ because the input is already lowercase.

/** Lowercase letters folded by search, in the order of FOLD_TO. */
export const FOLD_FROM =
  "àáâãäåçèéêëìíîïñòóôõöùúûüýÿāăąćĉċčďēĕėęěĝğġģĥĩīĭįĳĵķĺļľŀńņňōŏőŕŗřśŝşšţťũūŭůűųŵŷźżžơưǆǉǌǎǐǒǔǖǘǚǜǟǡǧǩǫǭǰǳǵǹǻȁȃȅȇȉȋȍȏȑȓȕȗșțȟȧȩȫȭȯȱȳøđłħıё";
/** What each letter of FOLD_FROM becomes. */
export const FOLD_TO =
  "aaaaaaceeeeiiiinooooouuuuyyaaaccccdeeeeegggghiiiiijkllllnnnooorrrssssttuuuuuuwyzzzoudlnaiouuuuuaagkoojdgnaaaeeiioorruusthaeooooyodlhiе";

/** Longest name key (normalizeName, UTF-8) stored: well under the 2.7 kB a btree index entry may hold. */
const MAX_NAME_KEY_BYTES = 1000;
const UTF8 = new TextEncoder();

/** Whether `name`'s key is short enough to index (some characters grow under NFKC: U+FDFA is 18 letters). */
export function nameKeyFits(name: string): boolean {
  return UTF8.encode(normalizeName(name)).length <= MAX_NAME_KEY_BYTES;
}

/** Lowercase, NFKC, single spaces, no surrounding quotes or punctuation: "“Dune”." and "dune" are one. */
export function normalizeName(name: string): string {
  return name
    .normalize("NFKC")
    .toLowerCase()
    .replace(/\s+/g, " ")
    .replace(/^[\s"'“”‘’«»`.,;:!?()[\]-]+|[\s"'“”‘’«»`.,;:!?()[\]-]+$/g, "")
    .trim();
}

const FOLD = new Map([...FOLD_FROM].map((ch, i) => [ch, [...FOLD_TO][i]!]));

/** `normalized` (already normalizeName'd) with accents folded, exactly as Postgres folds it. */
export function foldForSearch(normalized: string): string {
  let out = "";
  for (const ch of normalized) out += FOLD.get(ch) ?? ch;
  return out;
}
