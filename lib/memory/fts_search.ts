/**
 * Full-text search over the segments, ranked by BM25, at a bounded cost.
 *
 * FTS5 finds matches fast (about 0.1 µs each) but ranks them slowly (2 to 4 µs each), and a
 * query `OR`-ing words that are in most segments ("error", "file") would rank tens of
 * thousands of them. So a query is ranked whole only when it matches at most
 * {@link FTS_BUDGET} segments. Otherwise its words that match nothing are left out, then its
 * most common ones (those in the most segments first, which BM25 weighs least anyway) until the
 * rest match few enough. The budget is about what a memory of a few hundred run loops ranks
 * for a query of common words: a search costs about the same in a memory of 10,000 (a budget
 * of 2,000 made it four times as slow there).
 *
 * When even the rarest word is in more than {@link FTS_BUDGET} segments, nothing is ranked by
 * BM25: before it ranks anything, FTS5 counts the segments each word of the query is in by
 * reading every one of its matches, a read that grows with the memory (a search for "hello" in
 * a memory of 100,000 greetings spent 30 ms there, against 0.1 ms for the rest), and words that
 * common weigh next to nothing in BM25 anyway. The newest segments that have every word come
 * first then, then the newest that have any. Each is read from the newest end, as many matches
 * as needed, which costs the same whatever the size of the memory: the segments with every word
 * are looked for among the newest matches of each word, {@link FTS_BUDGET} in all (a hundred of
 * each of three words). FTS5 would look for them together by reading the words' matches until
 * it finds enough segments with them all, which are rare when the words are far apart, and a
 * bound on the rowid does not stop that read: `bench/fts_search_bench.ts` measured a search of
 * three common words at 0.49 ms in 3,000 segments and 0.70 ms in 60,000 (p99 1.7 ms) so,
 * against 0.53 and 0.54 ms (p99 1.3 ms) now.
 *
 * Counting a word's matches reads as many of them as the budget, which for the words of a
 * large memory that every search has ("test", "file") is most of a search's cost. So a word
 * found in more segments than the budget is recorded as such (`fts_common_terms`, with the
 * newest segment then), and taken to be so, uncounted, until the memory has grown by 64 times
 * the budget in segments (about 3,000 run loops, in which retention drops as many of the oldest
 * when it keeps a number of them), or until `prune()` or `vacuum()` forgets them all. Only words
 * that many segments hold are recorded, nothing else of a search.
 *
 * @module
 */

import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { SegmentType } from "./types.ts";

/** The most matches one search ranks. */
export const FTS_BUDGET = 300;

/**
 * For how many times {@link FTS_BUDGET} new segments a word found more common than the budget
 * is taken to be so without counting it again.
 */
const _COMMON_FOR = 64;

/** Searches the segments: their ids, best first. */
export type FtsSearch = (
  terms: readonly string[],
  types: readonly SegmentType[],
  limit: number,
) => number[];

/**
 * A full-text search over a memory database's `segments_fts` index, for terms made by
 * `ftsTerms()`, optionally only segments of some types.
 *
 * @example
 * ```ts
 * import { openMemoryDatabase } from "./schema.ts";
 * import { ftsSearcher } from "./fts_search.ts";
 * import { ftsTerms } from "./fts_query.ts";
 * const db = openMemoryDatabase(":memory:");
 * const add = db.prepare("INSERT INTO segments_fts (rowid, text, type) VALUES (?, ?, ?)");
 * add.run(1, "the lock was held", "reasoning");
 * add.run(2, "sqlite lock held by the writer", "tool_result");
 * const search = ftsSearcher(db);
 * if (search(ftsTerms("sqlite lock"), [], 5).join() !== "2,1") throw new Error("unexpected");
 * if (search(ftsTerms("lock"), ["reasoning"], 5).join() !== "1") throw new Error("unexpected");
 * db.close();
 * ```
 */
export function ftsSearcher(db: DatabaseSync, budget: number = FTS_BUDGET): FtsSearch {
  const count = db.prepare(
    "SELECT count(*) AS n FROM (SELECT 1 FROM segments_fts WHERE segments_fts MATCH ? LIMIT ?)",
  );
  const ranked = db.prepare(
    "SELECT rowid AS id FROM segments_fts WHERE segments_fts MATCH ? ORDER BY rank LIMIT ?",
  );
  const newest = db.prepare(
    "SELECT rowid AS id FROM segments_fts WHERE segments_fts MATCH ? ORDER BY rowid DESC LIMIT ?",
  );
  const last = db.prepare("SELECT max(id) AS id FROM segments");
  const known = db.prepare(
    `SELECT term FROM fts_common_terms WHERE term IN (SELECT value FROM json_each(?))
     AND seen > ?`,
  );
  const remember = db.prepare(
    `INSERT INTO fts_common_terms (term, seen) VALUES (?, ?)
     ON CONFLICT (term) DO UPDATE SET seen = excluded.seen`,
  );
  const matches = (expression: string) => count.get(expression, budget + 1)?.n as number;
  const ids = (rows: unknown[]) => (rows as Array<{ id: number }>).map((row) => row.id);

  return (terms, types, limit) => {
    if (terms.length === 0) return [];
    const filter = types.length > 0
      ? ` AND {type} : (${types.map((type) => `"${type}"`).join(" OR ")})`
      : "";
    const match = (group: readonly string[], operator: "OR" | "AND") =>
      `{text} : (${group.join(` ${operator} `)})${filter}`;
    // Words recorded as more common than the budget (in lower case, as the index folds them)
    // are not counted again: see the module's doc. A search of some types counts its whole OR
    // all the same, as a word common in all types may be rare in those.
    const newestId = Number(last.get()?.id ?? 0);
    const folded = terms.map((term) => term.toLowerCase());
    const recorded = known.all(JSON.stringify(folded), newestId - budget * _COMMON_FOR);
    const cached = new Set((recorded as Array<{ term: string }>).map((row) => row.term));
    const common = new Set(terms.filter((_, i) => cached.has(folded[i])));
    const all = match(terms, "OR");
    if (common.size === 0 || types.length > 0) {
      const n = matches(all);
      if (n <= budget) return ids(ranked.all(all, limit));
      if (terms.length === 1) common.add(terms[0]);
    }
    // Leave out the words that match nothing, then the most common ones until the rest match
    // few enough.
    const counted = terms
      .map((term) => ({ term, n: common.has(term) ? budget + 1 : matches(`{text} : ${term}`) }))
      .filter(({ n }) => n > 0)
      .sort((a, b) => a.n - b.n);
    const found = counted.filter(({ term, n }) => n > budget && !cached.has(term.toLowerCase()));
    _remember(db, remember, found.map(({ term }) => term.toLowerCase()), newestId);
    if (counted.length === 0) return [];
    const kept: string[] = [];
    for (let i = 0, total = 0; i < counted.length && total + counted[i].n <= budget; i++) {
      kept.push(counted[i].term);
      total += counted[i].n;
    }
    if (kept.length > 0) return ids(ranked.all(match(kept, "OR"), limit));
    // Every word is too common to rank by (see the module's doc): the newest matches, those
    // with every word first, looked for among the newest matches of each word, the budget's
    // in all.
    const words = counted.map(({ term }) => term);
    const newestOf = (group: readonly string[], n: number) =>
      ids(newest.all(match(group, "OR"), n));
    if (words.length === 1) return newestOf(words, limit);
    const per = Math.ceil(budget / words.length);
    const lists = words.map((word) => newestOf([word], per));
    const times = new Map<number, number>(); // how many of the words each segment read has
    for (const list of lists) for (const id of list) times.set(id, (times.get(id) ?? 0) + 1);
    const read = [...times.keys()].sort((a, b) => b - a);
    const every = read.filter((id) => times.get(id) === words.length);
    // Every segment with any of the words down to the newest of the words' last matches read
    // was read: the newest with any word, as far as that.
    const floor = Math.max(...lists.map((list) => list.length === per ? list[per - 1] : 0));
    const first = new Set(every);
    const newestFirst = [...every, ...read.filter((id) => id >= floor && !first.has(id))];
    if (newestFirst.length >= limit || floor === 0) return newestFirst.slice(0, limit);
    // Too few of them: made up to the limit from the newest that have any word.
    const seen = new Set(newestFirst);
    const more = newestOf(words, limit).filter((id) => !seen.has(id));
    return [...newestFirst, ...more].slice(0, limit);
  };
}

/**
 * Records `terms` as more common than the budget as of segment `seen`. A cache: when another
 * connection is writing, it is left for a later search rather than waited for.
 */
function _remember(
  db: DatabaseSync,
  statement: StatementSync,
  terms: readonly string[],
  seen: number,
): void {
  if (terms.length === 0 || db.isTransaction) return;
  const wait = db.prepare("PRAGMA busy_timeout").get()?.timeout as number;
  db.exec("PRAGMA busy_timeout = 0");
  try {
    db.exec("BEGIN IMMEDIATE");
    for (const term of terms) statement.run(term, seen);
    db.exec("COMMIT");
  } catch {
    if (db.isTransaction) db.exec("ROLLBACK");
  } finally {
    db.exec(`PRAGMA busy_timeout = ${Number(wait) || 0}`);
  }
}
