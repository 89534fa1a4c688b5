/**
 * Words of a command line as the command receives them: quotes removed, escapes applied, and
 * what is only known when the line runs (expansions) marked.
 *
 * @module
 */

import type { Node } from "web-tree-sitter";
import type { ShellWord } from "./wrappers.ts";

const _DYNAMIC = new Set([
  "simple_expansion",
  "expansion",
  "command_substitution",
  "process_substitution",
  "arithmetic_expansion",
]);

/**
 * The words that nodes make: adjacent nodes (no space between them) make one word.
 *
 * @example
 * ```ts
 * import { loadBashParser } from "./bash_parser.ts";
 * import { wordsOf } from "./words.ts";
 * const tree = (await loadBashParser())(`r""m 'a b' $HOME/x`);
 * const words = wordsOf(tree.root.namedChildren[0].children);
 * tree.free();
 * const texts = words.map((word) => word.text);
 * if (JSON.stringify(texts) !== '["rm","a b","$HOME/x"]' || !words[2].dynamic) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function wordsOf(nodes: readonly Node[]): ShellWord[] {
  const words: ShellWord[] = [];
  let end = -1;
  for (const node of nodes) {
    const word = wordOf(node);
    const last = words.at(-1);
    if (last && node.startIndex === end) {
      last.text += word.text;
      last.dynamic ||= word.dynamic;
      last.pattern ||= word.pattern;
    } else words.push(word);
    end = node.endIndex;
  }
  return words;
}

/**
 * One node's word after quote removal: `'a'`, `"a"`, `\a`, `$'a'` are all `a`; expansions keep
 * their source text and make the word dynamic; unquoted `*?[{` make it a pattern.
 *
 * @example
 * ```ts
 * import { loadBashParser } from "./bash_parser.ts";
 * import { wordOf } from "./words.ts";
 * const tree = (await loadBashParser())(`echo $'a\\tb'`);
 * const word = wordOf(tree.root.namedChildren[0].namedChildren[1]);
 * tree.free();
 * if (word.text !== "a\tb" || word.dynamic) throw new Error(JSON.stringify(word));
 * ```
 */
export function wordOf(node: Node): ShellWord {
  const text = node.text;
  switch (node.type) {
    case "word":
    case "number":
    case "variable_name":
    case "test_operator":
      return {
        text: text.replace(/\\(\n|.)/gs, (_, c: string) => (c === "\n" ? "" : c)),
        dynamic: false,
        pattern: /(^|[^\\])(\\\\)*[*?[{]/.test(text),
      };
    case "raw_string":
      return { text: text.slice(1, -1), dynamic: false, pattern: false };
    case "ansi_c_string":
      return { text: _ansiC(text.slice(2, -1)), dynamic: false, pattern: false };
    case "$":
      return { text: "", dynamic: false, pattern: false }; // the `$` of $"…"
    case "string":
    case "translated_string":
      return _quoted(node);
    case "concatenation":
    case "command_name":
    case "variable_assignment":
      return _concatenation(node);
    case "brace_expression":
      return { text, dynamic: false, pattern: true };
  }
  return { text, dynamic: true, pattern: _DYNAMIC.has(node.type) ? false : true };
}

function _concatenation(node: Node): ShellWord {
  const word: ShellWord = { text: "", dynamic: false, pattern: false };
  let at = node.startIndex;
  const source = node.text;
  for (const child of node.children) {
    word.text += source.slice(at - node.startIndex, child.startIndex - node.startIndex);
    const part = child.type === "=" ? { text: "=", dynamic: false, pattern: false } : wordOf(child);
    word.text += part.text;
    word.dynamic ||= part.dynamic;
    word.pattern ||= part.pattern;
    at = child.endIndex;
  }
  return word;
}

/** A double-quoted string: expansions are dynamic, the rest is text with `\"`-style escapes. */
function _quoted(node: Node): ShellWord {
  const source = node.text;
  const open = source.indexOf('"') + 1;
  const word: ShellWord = { text: "", dynamic: false, pattern: false };
  let at = node.startIndex + open;
  const literal = (end: number) =>
    source.slice(at - node.startIndex, end - node.startIndex)
      .replace(/\\([$`"\\\n])/g, (_, c: string) => (c === "\n" ? "" : c));
  for (const child of node.namedChildren) {
    if (!_DYNAMIC.has(child.type)) continue;
    word.text += literal(child.startIndex) + child.text;
    word.dynamic = true;
    at = child.endIndex;
  }
  word.text += literal(node.endIndex - 1);
  return word;
}

const _ESCAPES: Record<string, string> = {
  a: "\x07",
  b: "\b",
  e: "\x1b",
  E: "\x1b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v",
};

function _ansiC(body: string): string {
  return body.replace(
    /\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)/gs,
    (_, e: string) => {
      if (/^[xuU]/.test(e) && e.length > 1) return String.fromCodePoint(parseInt(e.slice(1), 16));
      if (/^[0-7]/.test(e)) return String.fromCharCode(parseInt(e, 8));
      if (e[0] === "c") return String.fromCharCode(e.charCodeAt(1) & 31);
      return _ESCAPES[e] ?? e;
    },
  );
}
