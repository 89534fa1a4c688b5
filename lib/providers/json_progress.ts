/**
 * Whether a JSON text that arrives in pieces (a tool call's arguments, streamed) is complete,
 * known at each piece for the cost of that piece. Parsing the whole text at every piece costs
 * its length each time: over a long argument streamed in small pieces, time quadratic in its
 * length (100,000 pieces of a 400 KB argument: minutes).
 *
 * @module
 */

/** Follows a JSON text as it grows (see {@link jsonProgress}). */
export interface JsonProgress {
  /** Takes the next piece of the text. */
  push(piece: string): void;
  /**
   * Whether `text` (the text pushed so far, given again so that it is not kept twice) is one
   * complete JSON object, array or string with nothing but whitespace after it. It is parsed
   * only when its brackets and quotes say so, and once until something other than whitespace
   * is pushed.
   */
  complete(text: string): boolean;
}

/**
 * A follower of a JSON text that starts with `text`.
 *
 * @example
 * ```ts
 * import { jsonProgress } from "./json_progress.ts";
 * let text = '{"path": "a.txt", "content": "{}';
 * const progress = jsonProgress(text);
 * if (progress.complete(text)) throw new Error("a string is still open");
 * for (const piece of ['"', "}", " "]) {
 *   text += piece;
 *   progress.push(piece);
 * }
 * if (!progress.complete(text)) throw new Error("complete");
 * progress.push("{}");
 * if (progress.complete(text + "{}")) throw new Error("two values are not one");
 * ```
 */
export function jsonProgress(text = ""): JsonProgress {
  let depth = 0; // open objects and arrays
  let inString = false;
  let escaped = false;
  let values = 0; // values begun at the top level
  let primitive = false; // inside a number or literal at the top level
  let container = false; // the first value is an object, an array or a string
  let parsed: boolean | undefined; // what parsing said, while only whitespace came since

  const push = (piece: string): void => {
    for (let i = 0; i < piece.length; i++) {
      const code = piece.charCodeAt(i);
      if (inString) {
        if (escaped) escaped = false;
        else if (code === 0x5c) escaped = true; // backslash
        else if (code === 0x22) inString = false; // quote
        continue;
      }
      if (code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09) {
        primitive = false;
        continue;
      }
      parsed = undefined;
      if (code === 0x22 || code === 0x7b || code === 0x5b) { // " { [
        if (depth === 0 && ++values === 1) container = true;
        if (code === 0x22) inString = true;
        else depth++;
        primitive = false;
      } else if (code === 0x7d || code === 0x5d) { // } ]
        if (--depth < 0) values = 2; // closes what never opened: never one value again
      } else if (depth === 0 && !primitive) {
        primitive = true;
        values++;
      }
    }
  };
  push(text);

  return {
    push,
    complete(whole) {
      if (values !== 1 || !container || depth !== 0 || inString) return false;
      if (parsed === undefined) {
        try {
          JSON.parse(whole);
          parsed = true;
        } catch {
          parsed = false;
        }
      }
      return parsed;
    },
  };
}
