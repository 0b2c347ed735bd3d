// The words of a recall question (db/repositories/recall.ts): its search key (db/search-key.ts), the
// words worth looking for, and their full-text terms — for facts as prefix queries, for entity names
// as lexemes of their tsvector (migration 0017).
import { foldForSearch, normalizeName } from "../search-key";

/** Words from which only the beginning must match (a stem for inflected languages). */
const STEM_FROM = 6;

const STOPWORDS = new Set(
  "a an and are as at be book books by did do does for from have how i in is it me my of on or read the to was what when where which who why with you your remember know about".split(
    " ",
  ),
);

/**
 * Words that, in a question bounded in time, describe the window rather than a memory ("what did I do
 * that week?"): matched as names they found nothing, and a week's misspelling fallback then compared
 * each of its 1,600 names at 100k memories (8 ms).
 */
const WINDOW_WORDS = new Set(
  "ago day days during happened happen last month months past that this today tonight week weekend weeks year years yesterday".split(" "),
);

/**
 * The question's search key, its content words, and its full-text terms: for facts as prefix queries
 * (`word:*`), for entity names as lexemes of their tsvector, which holds every word's beginnings too
 * (migration 0017): a beginning is any lexeme, a whole word only a weight-A one (`word:A`).
 */
export function terms(text: string, bounded: boolean) {
  // Postgres text cannot hold NUL: a query carrying one would fail the whole statement.
  const key = foldForSearch(normalizeName(text.replaceAll("\u0000", "")));
  const words = key
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0 && !STOPWORDS.has(w) && !(bounded && WINDOW_WORDS.has(w)))
    .slice(0, 12);
  // A long word matches by its beginning (Достоевского ~ Достоевский, Verwandlungen ~ Verwandlung);
  // the last word is always a prefix (the person may still be typing it).
  const beginning = (w: string, last: boolean) => {
    const letters = [...w];
    if (letters.length >= STEM_FROM) return letters.slice(0, Math.max(STEM_FROM - 1, letters.length - 3)).join("");
    return last ? w : null;
  };
  const tsTerms = words.map((w, i) => {
    const b = beginning(w, i === words.length - 1);
    return b === null ? w : `${b}:*`;
  });
  const nameTerms = words.map((w, i) => beginning(w, i === words.length - 1) ?? `${w}:A`);
  return { key, words, phrase: words.join(" "), tsTerms, nameTerms };
}
