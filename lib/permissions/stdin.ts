/**
 * What a command's standard input holds, when the command line says: the text of a here-string
 * (`<<< 'rm x'`) or of a here-document (`<<'EOF'`), known unless it has expansions. A pipe, a
 * file or a descriptor make it unknown. A shell reading its commands from standard input runs
 * that text.
 *
 * @module
 */

import type { Node } from "web-tree-sitter";
import type { ShellWord } from "./wrappers.ts";
import { wordsOf } from "./words.ts";

/**
 * The standard input of the command `statement` (a `command` node, or the `redirected_statement`
 * around it), from its redirections in source order (`redirects`, each with a file descriptor
 * child or a number written just before it), else what it inherits: nothing known after a pipe,
 * `inherited` otherwise. Undefined when unknown; a word marked dynamic when it has expansions.
 *
 * @example
 * ```ts
 * import { loadBashParser } from "./bash_parser.ts";
 * import { standardInput } from "./stdin.ts";
 * const tree = (await loadBashParser())("bash <<< 'rm x'");
 * const command = tree.root.namedChildren[0];
 * const stdin = standardInput(command, command.children, undefined);
 * tree.free();
 * if (stdin?.text !== "rm x" || stdin.dynamic) throw new Error(JSON.stringify(stdin));
 * ```
 */
export function standardInput(
  statement: Node,
  redirects: readonly Node[],
  inherited: ShellWord | undefined,
): ShellWord | undefined {
  const pipeline = statement.parent?.type === "pipeline" ? statement.parent : undefined;
  let stdin = pipeline && pipeline.namedChildren[0]?.id !== statement.id ? undefined : inherited;
  for (const redirect of redirects) {
    if (!/^(file|heredoc|herestring)_redirect$/.test(redirect.type)) continue;
    if (_descriptorOf(redirect) !== "0") continue;
    if (redirect.type === "herestring_redirect") {
      const targets = redirect.namedChildren.filter((child) => child.type !== "file_descriptor");
      stdin = wordsOf(targets)[0];
    } else if (redirect.type === "heredoc_redirect") stdin = _heredoc(redirect);
    else if (redirect.children.some((child) => /^<(&|>|&-)?$/.test(child.type))) stdin = undefined;
  }
  return stdin;
}

/** The descriptor a redirection is for: its own, a number just before it, or the default. */
function _descriptorOf(redirect: Node): string {
  const own = redirect.children.find((child) => child.type === "file_descriptor");
  if (own) return own.text;
  let before = redirect.previousSibling;
  if (before?.type === "command") before = before.lastChild; // `bash 0</dev/null`
  const number = before?.type === "number" && before.endIndex === redirect.startIndex
    ? before.text
    : undefined;
  if (number !== undefined) return number;
  if (redirect.type !== "file_redirect") return "0";
  return redirect.children.some((child) => /^<(&|>|&-)?$/.test(child.type)) ? "0" : "1";
}

/** A here-document's text: literal with a quoted delimiter, else dynamic when it could expand. */
function _heredoc(redirect: Node): ShellWord {
  const start = redirect.children.find((child) => child.type === "heredoc_start")?.text ?? "";
  let text = redirect.children.find((child) => child.type === "heredoc_body")?.text ?? "";
  if (redirect.children.some((child) => child.type === "<<-")) text = text.replace(/^\t+/gm, "");
  const quoted = /['"\\]/.test(start);
  return { text, dynamic: !quoted && /[$`\\]/.test(text), pattern: false };
}
