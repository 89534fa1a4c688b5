/**
 * Seeded text for the benchmarks: a vocabulary of 20,000 words (common English and programming
 * words first, then made-up ones) drawn with Zipfian frequencies, as real text is.
 *
 * @module
 */

import { random } from "./stats.ts";

/** A seeded source of words: `next()` in [0, 1), `pick()` one of a list, `word()` by frequency. */
export interface ZipfText {
  /** The next number of the seeded generator, in [0, 1). */
  next(): number;
  /** One of `items`, uniformly. */
  pick<T>(items: readonly T[]): T;
  /** A word, by its Zipfian frequency (s = 1.07). */
  word(): string;
  /** The vocabulary, the most frequent first. */
  vocabulary: readonly string[];
}

/**
 * The text source seeded with `seed`.
 *
 * @example
 * ```ts
 * import { zipfText } from "./zipf_text.ts";
 * const text = zipfText(1);
 * if (text.vocabulary.length !== 20_000 || typeof text.word() !== "string") throw new Error();
 * ```
 */
export function zipfText(seed: number): ZipfText {
  const next = random(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)];
  const common = (
    "the of and to a in is it that for on with as this was be by not are from or have an at " +
    "but we which you one all they there their has can if will more when so no what out up " +
    "file test error function return value import module config path line build type string " +
    "number run fix change add remove update check use call data read write server request " +
    "response cache lock database query index table time memory output input command failed " +
    "passed timeout retry async await promise stream event handler model tool agent session " +
    "token limit deno node npm package version commit branch merge diff patch schema json"
  ).split(" ");
  const syllables = "ka lo mi ne ru sa te vo zi pa do gu be fi ha jo ly ma no qu re si tu wa xe"
    .split(" ");
  const words = new Set(common);
  while (words.size < 20_000) {
    let made = "";
    for (let n = 2 + Math.floor(next() * 3); n > 0; n--) made += pick(syllables);
    words.add(made);
  }
  const vocabulary = [...words];
  const table = new Float64Array(vocabulary.length);
  let sum = 0;
  for (let rank = 0; rank < table.length; rank++) table[rank] = sum += 1 / (rank + 1) ** 1.07;
  const cumulative = table.map((value) => value / sum);
  const word = () => {
    const x = next();
    let low = 0;
    let high = cumulative.length - 1;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (cumulative[mid] < x) low = mid + 1;
      else high = mid;
    }
    return vocabulary[low];
  };
  return { next, pick, word, vocabulary };
}
