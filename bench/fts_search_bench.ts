/**
 * The full-text search of the memory at two sizes: `deno bench -A bench/fts_search_bench.ts`.
 *
 * Two indexes of Zipfian prose (3,000 segments, about what 500 run loops leave, and 60,000, about
 * what the CLI's default retention keeps) are searched for the same queries: three of the words
 * most common in code and prose ("file", "test", "error"…), each in more segments than a search
 * ranks at both sizes, so that the newest segments with all three are looked for among each
 * word's newest matches; and prompts of a few words. A search should cost about the same at
 * both sizes.
 */

import { ftsSearcher } from "../lib/memory/fts_search.ts";
import { ftsTerms } from "../lib/memory/fts_query.ts";
import { openMemoryDatabase } from "../lib/memory/schema.ts";
import { zipfText } from "./zipf_text.ts";

const text = zipfText(2027);

/** An index of `n` segments of 20 to 80 words, 5 to a transaction as archives write them. */
function index(n: number) {
  const db = openMemoryDatabase(":memory:");
  const add = db.prepare("INSERT INTO segments_fts (rowid, text, type) VALUES (?, ?, 'response')");
  for (let id = 1; id <= n; id += 5) {
    db.exec("BEGIN");
    for (let k = id; k < id + 5 && k <= n; k++) {
      add.run(k, Array.from({ length: 20 + Math.floor(text.next() * 60) }, text.word).join(" "));
    }
    db.exec("COMMIT");
  }
  return { db, search: ftsSearcher(db) };
}

// The most common words after the stopwords (which queries leave out).
const common = text.vocabulary.slice(44, 74);
const commonQueries = Array.from(
  { length: 64 },
  () => ftsTerms(`${text.pick(common)} ${text.pick(common)} ${text.pick(common)}`),
);
const prompts = Array.from(
  { length: 64 },
  () => ftsTerms(Array.from({ length: 3 + Math.floor(text.next() * 6) }, text.word).join(" ")),
);

for (const size of [3_000, 60_000]) {
  const { search } = index(size);
  let i = 0;
  Deno.bench(`three common words, ${size.toLocaleString("en-US")} segments`, {
    group: "common words",
    baseline: size === 3_000,
  }, () => {
    search(commonQueries[i++ % commonQueries.length], [], 40);
  });
  let k = 0;
  Deno.bench(`a prompt, ${size.toLocaleString("en-US")} segments`, {
    group: "prompts",
    baseline: size === 3_000,
  }, () => {
    search(prompts[k++ % prompts.length], [], 40);
  });
}
