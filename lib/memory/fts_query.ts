/**
 * Turning what a user typed into a safe FTS5 expression, and fusing rankings.
 *
 * @module
 */

/** Words too common to help a search; dropped unless the query has nothing else. */
const _STOPWORDS = new Set(
  ("a an and are as at be but by can could did do does for from had has have how i if in is it " +
    "its me my no not of on or our so that the their then there these they this to was we were " +
    "what when where which who why will with would you your")
    .split(" "),
);

/** The most terms a query keeps: bounds the cost of a long pasted text. */
const _MAX_TERMS = 32;

/**
 * The terms of an FTS5 expression for free text, each a quoted string (see {@link ftsQuery}).
 *
 * @example
 * ```ts
 * import { ftsTerms } from "./fts_query.ts";
 * if (ftsTerms('say "hi" to Bob').join(" ") !== '"say" "hi" "Bob"') throw new Error("unexpected");
 * ```
 */
export function ftsTerms(text: string): string[] {
  const words = text.match(/[\p{L}\p{N}\p{M}]+(?:[._\-/:'][\p{L}\p{N}\p{M}]+)*/gu) ?? [];
  const seen = new Set<string>();
  const terms: string[] = [];
  for (const word of words) {
    const key = word.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    terms.push(word);
  }
  const useful = terms.filter((term) => !_STOPWORDS.has(term.toLowerCase()));
  const kept = (useful.length > 0 ? useful : terms).slice(0, _MAX_TERMS);
  return kept.map((term) => `"${term.replaceAll('"', '""')}"`);
}

/**
 * An FTS5 expression for free text: its words (letters and digits, kept joined by `.`, `_`, `-`,
 * `/`, `:` or `'` as in `lib/mod.ts` or `don't`), each quoted as a string so that nothing the user
 * typed (quotes, `*`, `-`, `^`, `NEAR`, `AND`, parentheses, column filters) acts as syntax,
 * joined with `OR` so that a segment matching more of them ranks higher under BM25. Common
 * English words are dropped when others remain, duplicates once, at most 32 terms. `undefined`
 * when the text has no words.
 *
 * @example
 * ```ts
 * import { ftsQuery } from "./fts_query.ts";
 * const expression = ftsQuery('NEAR("sqlite" -lock*) the lib/mod.ts');
 * if (expression !== '"NEAR" OR "sqlite" OR "lock" OR "lib/mod.ts"') throw new Error(expression);
 * if (ftsQuery("-- * ()") !== undefined) throw new Error("unexpected");
 * ```
 */
export function ftsQuery(text: string): string | undefined {
  const terms = ftsTerms(text);
  return terms.length > 0 ? terms.join(" OR ") : undefined;
}

/**
 * Reciprocal rank fusion: each item scores the sum over the rankings it appears in of
 * `1 / (k + rank)`, rank counted from 1, divided by the best possible score (first in every
 * ranking), so that relevance runs from 0 to 1. Ties keep the order of first appearance.
 *
 * @example
 * ```ts
 * import { fuseRankings } from "./fts_query.ts";
 * const fused = fuseRankings([[1, 2, 3], [3, 1]]);
 * if (fused[0].id !== 1 || fused[0].relevance >= 1 || fused[2].id !== 2) throw new Error("unexpected");
 * ```
 */
export function fuseRankings(
  rankings: readonly (readonly number[])[],
  k = 60,
): Array<{ id: number; relevance: number }> {
  if (rankings.length === 0) return [];
  const scores = new Map<number, number>();
  for (const ranking of rankings) {
    for (const [rank, id] of ranking.entries()) {
      scores.set(id, (scores.get(id) ?? 0) + 1 / (k + rank + 1));
    }
  }
  const best = rankings.length / (k + 1);
  return [...scores]
    .map(([id, score]) => ({ id, relevance: Math.min(1, score / best) }))
    .sort((a, b) => b.relevance - a.relevance);
}
