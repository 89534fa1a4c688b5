/**
 * Finding a file's matching lines and printing them with context, the way grep does.
 *
 * @module
 */

import type { TextMatcher } from "./regex.ts";

const _MAX_LINE = 500;

/**
 * The start offsets of the lines of `text` that `matcher` matches. One search runs over the
 * whole text; after each match it goes on from the next line. A match that runs past its
 * line's end counts only if the line alone matches too. Stops after `max` lines.
 *
 * @example
 * ```ts
 * import { matchLines } from "./grep_lines.ts";
 * import { compileGrepPattern } from "./regex.ts";
 * const text = "a\nfoo\nb\nfoo";
 * const matcher = await (await compileGrepPattern("foo", false)).matcherFor(text);
 * const starts = matchLines(text, matcher, Infinity);
 * if (starts.join() !== "2,8") throw new Error("unexpected");
 * ```
 */
export function matchLines(text: string, matcher: TextMatcher, max: number): number[] {
  const starts: number[] = [];
  for (let m = matcher.find(text, 0); m !== undefined;) {
    const at = m[0];
    // The empty string after a final newline (or of an empty file) is not a line.
    if (at === text.length && (at === 0 || text.charCodeAt(at - 1) === 10)) break;
    const start = at === 0 ? 0 : text.lastIndexOf("\n", at - 1) + 1;
    let end = text.indexOf("\n", at);
    if (end === -1) end = text.length;
    if (m[1] <= end || matcher.indexIn(text.slice(start, end)) !== -1) starts.push(start);
    if (end >= text.length || starts.length >= max) break;
    m = matcher.find(text, end + 1);
  }
  return starts;
}

/**
 * The first `count` matching lines of a file with their context, as one block of text (so
 * that the file's text can be freed). Groups of lines that do not touch are separated by
 * `--`, as grep does; with context, so is this file's first group from earlier output.
 *
 * @example
 * ```ts
 * import { format } from "./grep_lines.ts";
 * import { compileGrepPattern } from "./regex.ts";
 * const text = "one\ntwo\nthree\n";
 * const matcher = await (await compileGrepPattern("two", false)).matcherFor(text);
 * const block = format({ display: "f.txt", text, hits: [4], matcher }, 1, 1, false);
 * if (block !== "f.txt-1-one\nf.txt:2:two\nf.txt-3-three") throw new Error("unexpected");
 * ```
 */
export function format(
  result: { display: string; text: string; hits: number[]; matcher?: TextMatcher },
  count: number,
  context: number,
  after: boolean,
): string {
  const { display, text, hits, matcher } = result;
  const lines: string[] = [];
  let lineNo = 1, at = 0; // the line that starts at offset `at`
  let last = 0, lastStart = 0, lastHit = 0; // the last line printed, and the last match
  const print = (sep: string, n: number, start: number, hit: boolean): void => {
    lines.push(`${display}${sep}${n}${sep}${_clip(text, start, hit ? matcher : undefined)}`);
    last = n;
    lastStart = start;
  };
  const trailing = (upTo: number): void => {
    while (last < upTo) {
      const end = text.indexOf("\n", lastStart);
      if (end === -1 || end + 1 >= text.length) return;
      print("-", last + 1, end + 1, false);
    }
  };
  for (let i = 0; i < count; i++) {
    const start = hits[i];
    while (at < start) {
      at = text.indexOf("\n", at) + 1;
      lineNo++;
    }
    if (context) {
      if (last) trailing(Math.min(lastHit + context, lineNo - 1));
      const from = Math.max(last + 1, lineNo - context);
      if (last ? from > last + 1 : after) lines.push("--");
      const before: number[] = [];
      for (let n = lineNo - 1, s = start; n >= from; n--) {
        s = s < 2 ? 0 : text.lastIndexOf("\n", s - 2) + 1;
        before.push(s);
      }
      for (let k = before.length - 1; k >= 0; k--) print("-", lineNo - 1 - k, before[k], false);
    }
    print(":", lineNo, start, true);
    lastHit = lineNo;
  }
  if (context) trailing(lastHit + context);
  return lines.join("\n");
}

/** The line starting at `start`, cut around its first match when it is very long. */
function _clip(text: string, start: number, matcher: TextMatcher | undefined): string {
  let end = text.indexOf("\n", start);
  if (end === -1) end = text.length;
  if (end > start && text.charCodeAt(end - 1) === 13) end--;
  if (end - start <= _MAX_LINE) return text.slice(start, end);
  let from = start;
  const found = matcher?.indexIn(text.slice(start, end)) ?? -1;
  if (found > 100) from = start + found - 100;
  const to = Math.min(end, from + _MAX_LINE);
  return `${from > start ? "…" : ""}${text.slice(from, to)}${to < end ? "…" : ""} [line of ${
    end - start
  } characters cut]`;
}
