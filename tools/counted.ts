/**
 * A count said with its noun, singular for one: "1 line", "2 lines", "1 entry".
 *
 * @module
 */

/**
 * `count` and its noun: `noun` for one, else `plural` (default: the noun with "s", or "es"
 * after s, x, ch and sh).
 *
 * @example
 * ```ts
 * import { counted } from "./counted.ts";
 * if (counted(1, "line") !== "1 line" || counted(6, "byte") !== "6 bytes") throw new Error();
 * if (counted(2, "match") !== "2 matches" || counted(0, "entry", "entries") !== "0 entries") {
 *   throw new Error();
 * }
 * ```
 */
export function counted(count: number, noun: string, plural?: string): string {
  if (count === 1) return `${count} ${noun}`;
  return `${count} ${plural ?? (/(?:s|x|ch|sh)$/.test(noun) ? `${noun}es` : `${noun}s`)}`;
}
