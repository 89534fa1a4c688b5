/**
 * The `grep` tool's regular expressions, searched in time linear in the text whatever the
 * pattern: a backtracking engine (V8's) takes time quadratic in a line for `\w+@` and
 * exponential for `(x+x+)+y`, and a regular expression running cannot be interrupted.
 *
 * A pattern is read once: what it would cost V8 at most, per character, is worked out from its
 * quantifiers (a quantified group, a backreference or a lookaround puts it out of V8's hands).
 * Each text is then searched by V8 when that cost over the text stays under a budget (about
 * 20 ms), else by RE2 (`npm:re2js`, a linear-time engine without backreferences and
 * lookaheads, loaded the first time a text needs it). Both see the same pattern: the
 * JavaScript syntax is translated to RE2's (named groups, `\s`, `.`, `$` before `\r\n`,
 * `\u` escapes), and a pattern RE2 cannot run is refused up front, saying why.
 *
 * @module
 */

import type { RE2JS } from "re2js";
import { loadLazy } from "../lib/lazy/load.ts";

/** Searches one text with one engine; `^` and `$` match at line ends. */
export interface TextMatcher {
  /** Whether the text has a match anywhere. */
  test(text: string): boolean;
  /** The start and end of the first match at or after `from`, if any. */
  find(text: string, from: number): [number, number] | undefined;
  /** Where the first match in `line` starts, or -1. */
  indexIn(line: string): number;
}

/** A compiled grep pattern: gives each text the engine that searches it safely. */
export interface GrepPattern {
  /** The matcher for `text`: V8's when it is fast there whatever the text, else RE2's. */
  matcherFor(text: string): Promise<TextMatcher>;
}

/** Options of {@link compileGrepPattern}. */
export interface GrepPatternOptions {
  /**
   * The most steps of backtracking V8 may take over a text at worst (default 5e7, about
   * 20 ms); a text that could cost more is searched by RE2. 0 sends every text to RE2.
   */
  budget?: number;
}

/** A bounded quantifier wider than this counts as unbounded. */
const _WIDE = 256;
/** JavaScript's `\s`, as the inside of a character class RE2 reads. */
const _SPACE = "\\t\\n\\x0b\\f\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}" +
  "\\x{202f}\\x{205f}\\x{3000}\\x{feff}";
const _DOT = "[^\\n\\r\\x{2028}\\x{2029}]";
const _ANY = "\\x{0}-\\x{10ffff}";

/** What a pattern costs V8, and its RE2 form. */
interface _Shape {
  re2: string;
  /** Why RE2 cannot run it, e.g. "a backreference (\1)". */
  unsupported?: string;
  lookbehind: boolean;
  /** No quantified group, backreference or lookaround. */
  v8: boolean;
  /** The product of bounded quantifiers' widths and alternatives' counts. */
  finite: number;
  /** Unbounded quantifiers of an atom that does not match a newline: they run within a line. */
  lineRuns: number;
  /** Unbounded quantifiers of an atom that matches a newline: they run through the text. */
  textRuns: number;
}

let _re2: Promise<typeof RE2JS> | undefined;
const _loadRe2 = (): Promise<typeof RE2JS> =>
  _re2 ??= loadLazy("re2js").then((module) => module.RE2JS);

/**
 * Compiles the model's pattern (JavaScript syntax; a leading `(?i)` ignores case), saying what
 * is wrong with it, or why it cannot be searched, when it cannot be.
 *
 * @example
 * ```ts
 * import { compileGrepPattern } from "./regex.ts";
 * const pattern = await compileGrepPattern("(x+x+)+y", false);
 * const matcher = await pattern.matcherFor("x".repeat(30));
 * if (matcher.test("x".repeat(30))) throw new Error("unexpected");
 * ```
 */
export async function compileGrepPattern(
  pattern: string,
  ignoreCase: boolean,
  options: GrepPatternOptions = {},
): Promise<GrepPattern> {
  const { budget = 5e7 } = options;
  let source = pattern;
  if (source.startsWith("(?i)")) {
    source = source.slice(4);
    ignoreCase = true;
  }
  const flags = `gm${ignoreCase ? "i" : ""}${/\\[pPu]\{/.test(source) ? "u" : ""}`;
  let re: RegExp;
  try {
    re = new RegExp(source, flags);
  } catch (error) {
    throw new Error(
      `Invalid regular expression ${JSON.stringify(pattern)}: ${(error as Error).message}. ` +
        "The pattern is a JavaScript regular expression: put a backslash before ( ) [ ] { } . * + ? | \\ " +
        "to match them literally.",
    );
  }
  const shape = _shape(source, flags);
  if (shape.unsupported) {
    throw new Error(
      `The pattern ${JSON.stringify(pattern)} uses ${shape.unsupported}, which grep does not ` +
        "support: patterns are searched in time linear in the text (as ripgrep does), which " +
        "rules out backreferences and lookaheads. Write the repeated text out, or search for a " +
        "looser pattern and narrow the results with a second search.",
    );
  }
  const v8 = _v8Matcher(re);
  let re2: Promise<TextMatcher> | undefined;
  const viaRe2 = (): Promise<TextMatcher> =>
    re2 ??= _loadRe2().then((engine) => _re2Matcher(engine, shape, ignoreCase, pattern));
  // A pattern V8 cannot run safely is compiled by RE2 now, so that its errors come first.
  if (!shape.v8 || budget <= 0) await viaRe2();
  return {
    matcherFor: (text) => _v8Fits(shape, text, budget) ? Promise.resolve(v8) : viaRe2(),
  };
}

/** Whether V8's worst case over `text` stays within the budget. */
function _v8Fits(shape: _Shape, text: string, budget: number): boolean {
  if (!shape.v8 || budget <= 0) return false;
  const n = Math.max(text.length, 1);
  const fixed = n * shape.finite * n ** shape.textRuns;
  if (fixed * n ** shape.lineRuns <= budget) return true;
  if (fixed > budget) return false;
  const longest = (budget / fixed) ** (1 / shape.lineRuns);
  for (let at = 0; at < text.length;) {
    let end = text.indexOf("\n", at);
    if (end === -1) end = text.length;
    if (end - at > longest) return false;
    at = end + 1;
  }
  return true;
}

function _v8Matcher(re: RegExp): TextMatcher {
  const line = new RegExp(re.source, re.flags.replace("g", ""));
  return {
    test(text) {
      re.lastIndex = 0;
      return re.test(text);
    },
    find(text, from) {
      re.lastIndex = from;
      const m = re.exec(text);
      return m ? [m.index, m.index + m[0].length] : undefined;
    },
    indexIn: (text) => line.exec(text)?.index ?? -1,
  };
}

function _re2Matcher(
  engine: typeof RE2JS,
  shape: _Shape,
  ignoreCase: boolean,
  pattern: string,
): TextMatcher {
  let re: RE2JS;
  try {
    re = engine.compile(
      shape.re2,
      engine.MULTILINE | (ignoreCase ? engine.CASE_INSENSITIVE : 0) |
        (shape.lookbehind ? engine.LOOKBEHINDS : 0),
    );
  } catch (error) {
    throw new Error(
      `The pattern ${JSON.stringify(pattern)} cannot be searched in linear time ` +
        `(${(error as Error).message}). Use the syntax ripgrep accepts: no backreferences, ` +
        "no lookaheads, repetition counts up to 1000.",
    );
  }
  let last: string | undefined;
  let matcher: ReturnType<RE2JS["matcher"]> | undefined;
  return {
    test: (text) => re.test(text),
    find(text, from) {
      if (text !== last || !matcher) {
        last = text;
        matcher = re.matcher(text);
      }
      return matcher.find(from) ? [matcher.start(), matcher.end()] : undefined;
    },
    indexIn(line) {
      const found = re.matcher(line);
      return found.find() ? found.start() : -1;
    },
  };
}

/** Reads a JavaScript pattern (one that compiles): its cost to V8 and its RE2 form. */
function _shape(source: string, flags: string): _Shape {
  const shape: _Shape = {
    re2: "",
    lookbehind: false,
    v8: true,
    finite: 1,
    lineRuns: 0,
    textRuns: 0,
  };
  const unsupported = (what: string) => {
    shape.unsupported ??= what;
    shape.v8 = false;
  };
  const out: string[] = [];
  const alternatives: number[] = [1];
  let atom = -1; // where the last atom starts in `source`; -1 after a quantifier or `(`
  let group = false; // whether the last atom is a group
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    const start = i;
    if (c === "\\") {
      const [re2, length, backreference] = _escape(source, i, false);
      if (backreference) unsupported(`a backreference (${source.slice(i, i + length)})`);
      out.push(re2);
      i += length;
      atom = start;
      group = false;
    } else if (c === "[") {
      const [re2, length] = _class(source, i);
      out.push(re2);
      i += length;
      atom = start;
      group = false;
    } else if (c === "(") {
      const head = source.slice(i, i + 4);
      if (head.startsWith("(?=") || head.startsWith("(?!")) {
        unsupported(`a lookahead (${head.slice(0, 3)}…)`);
        out.push(head.slice(0, 3));
        i += 3;
      } else if (head === "(?<=" || head === "(?<!") {
        shape.lookbehind = true;
        shape.v8 = false;
        out.push(head);
        i += 4;
      } else if (head.startsWith("(?<")) {
        out.push("(?P<");
        i += 3;
      } else if (head.startsWith("(?")) {
        const end = source.indexOf(":", i) + 1;
        out.push(source.slice(i, end));
        i = end;
      } else {
        out.push("(");
        i++;
      }
      alternatives.push(1);
      atom = -1;
    } else if (c === ")") {
      shape.finite *= alternatives.pop() ?? 1;
      out.push(")");
      i++;
      group = true;
      atom = start;
    } else if (c === "|") {
      alternatives[alternatives.length - 1]++;
      out.push("|");
      i++;
      atom = -1;
    } else if (
      c === "*" || c === "+" || c === "?" || (c === "{" && _BOUNDS.test(source.slice(i)))
    ) {
      let min = c === "+" ? 1 : 0, max = c === "?" ? 1 : Infinity;
      if (c === "{") {
        const [, low, comma, high] = _BOUNDS.exec(source.slice(i))!;
        min = Number(low);
        max = comma ? (high ? Number(high) : Infinity) : min;
        i += source.slice(i).indexOf("}") + 1;
        out.push(source.slice(start, i));
      } else {
        out.push(c);
        i++;
      }
      if (source[i] === "?") {
        out.push("?");
        i++;
      }
      if (atom !== -1) {
        if (group) shape.v8 = false;
        else if (max - min + 1 <= _WIDE) shape.finite *= max - min + 1;
        else if (new RegExp(source.slice(atom, start), flags.replace("g", "")).test("\n")) {
          shape.textRuns++;
        } else shape.lineRuns++;
      }
      atom = -1;
    } else {
      out.push(c === "." ? _DOT : c === "$" ? "(?:\\r?$)" : "{}]".includes(c) ? `\\${c}` : c);
      i++;
      atom = c === "^" || c === "$" ? -1 : start;
      group = false;
    }
  }
  shape.finite *= alternatives[0];
  shape.re2 = out.join("");
  return shape;
}

const _BOUNDS = /^\{(\d+)(,(\d*))?\}/;

/**
 * One escape at `at`: its RE2 form, its length, and whether it is a backreference. Inside a
 * character class, `\s` is given as ranges and `\b` is a backspace.
 */
function _escape(source: string, at: number, inClass: boolean): [string, number, boolean] {
  const c = source[at + 1] ?? "";
  const hex = (code: string): string => `\\x{${code}}`;
  if (/[1-9]/.test(c)) return ["", 1 + /^\d+/.exec(source.slice(at + 1))![0].length, true];
  if (c === "k" && source[at + 2] === "<") {
    return ["", source.indexOf(">", at) + 1 - at || 2, true];
  }
  if (c === "s") return [inClass ? _SPACE : `[${_SPACE}]`, 2, false];
  if (c === "S" && !inClass) return [`[^${_SPACE}]`, 2, false];
  if (c === "b" && inClass) return ["\\x08", 2, false];
  if (c === "0") return ["\\x00", 2, false];
  if (c === "/") return ["/", 2, false];
  if (c === "c" && /[A-Za-z]/.test(source[at + 2] ?? "")) {
    return [hex((source.charCodeAt(at + 2) % 32).toString(16)), 3, false];
  }
  if (c === "u") {
    const braced = /^\{([0-9a-fA-F]+)\}/.exec(source.slice(at + 2));
    if (braced) return [hex(braced[1]), 2 + braced[0].length, false];
    const four = /^[0-9a-fA-F]{4}/.exec(source.slice(at + 2));
    if (four) return [hex(four[0]), 6, false];
  }
  if ((c === "p" || c === "P") && source[at + 2] === "{") {
    const end = source.indexOf("}", at);
    return [source.slice(at, end + 1), end + 1 - at, false];
  }
  return [source.slice(at, at + 2), 2, false];
}

/** The character class at `at`: its RE2 form and its length. */
function _class(source: string, at: number): [string, number] {
  let i = at + 1;
  const negated = source[i] === "^";
  if (negated) i++;
  if (source[i] === "]") return [negated ? `[${_ANY}]` : `[^${_ANY}]`, i + 1 - at];
  const out = [negated ? "[^" : "["];
  while (i < source.length && source[i] !== "]") {
    if (source[i] === "\\") {
      const [re2, length] = _escape(source, i, true);
      out.push(re2);
      i += length;
    } else {
      out.push(source[i] === "[" ? "\\[" : source[i]);
      i++;
    }
  }
  out.push("]");
  return [out.join(""), i + 1 - at];
}
