/**
 * What a Bash command line runs: every simple command in it, wherever it hides (`&&`, `;`, `|`,
 * subshells, `$( )`, backticks, `<( )`, `if`/`for`/`while`/`case` bodies, functions, `bash -c`,
 * `eval`), each with quotes removed and wrappers (`sudo`, `env`, `timeout`, `xargs`, …) seen
 * through. Parsed by tree-sitter's Bash grammar ({@link loadBashParser}).
 *
 * @module
 */

import type { Node } from "web-tree-sitter";
import { type BashParse, loadBashParser } from "./bash_parser.ts";
import { isShell, type ShellWord, unwrapCommand } from "./wrappers.ts";
import { standardInput } from "./stdin.ts";
import { wordOf, wordsOf } from "./words.ts";

/** One simple command of a command line. */
export interface ShellCommand {
  /** The command that runs, as its words after quote removal and unwrapping (`["rm", "x"]`). */
  words: string[];
  /** `NAME=value` words set for it: before it, or given to `env` and `sudo`. */
  assignments: string[];
  /** The wrappers around it, outermost first, each with all its words (`["sudo", "rm", "x"]`). */
  wrappers: string[][];
  /** Why what runs is not known from the text (`$cmd x`, `eval "$x"`); absent when it is. */
  opaque?: string;
  /**
   * Why what it runs is data, though seen (a shell fed a here-document or a here-string): deny
   * and ask rules see the commands of that data, but no allow rule allows this command.
   */
  fromData?: string;
}

const _MAX_DEPTH = 8;
const _MAX_LENGTH = 1_000_000;
const _REDIRECTS = new Set(["file_redirect", "heredoc_redirect", "herestring_redirect"]);

/**
 * Every simple command of a Bash command line, or undefined when the line cannot be parsed.
 * A command's words are what the program receives: `'rm'`, `r""m` and `\rm` are all `rm`;
 * expansions keep their source text (`$HOME`). Leading `NAME=value` words are set apart.
 * Commands come in source order, outer before inner (`echo $(rm x)`: `echo …`, then `rm x`).
 * Assignments with no command (`x=1`) and declarations (`export A=1`) are commands too.
 *
 * @example
 * ```ts
 * import { parseCommandLine } from "./shell.ts";
 * const [command] = (await parseCommandLine("sudo FOO=1 timeout 5 rm -rf build"))!;
 * if (command.words.join(" ") !== "rm -rf build") throw new Error("unexpected");
 * if (command.wrappers.length !== 2 || command.assignments[0] !== "FOO=1") {
 *   throw new Error("unexpected");
 * }
 * if (await parseCommandLine("echo 'unterminated") !== undefined) throw new Error("unexpected");
 * ```
 */
export async function parseCommandLine(line: string): Promise<ShellCommand[] | undefined> {
  if (line.length > _MAX_LENGTH) return undefined;
  let parse: BashParse;
  try {
    parse = await loadBashParser();
  } catch {
    return undefined;
  }
  const out: ShellCommand[] = [];
  return _analyze(parse, line, { depth: 0, wrappers: [], assignments: [] }, out) ? out : undefined;
}

/**
 * Each simple command of a Bash command line as its words, after quote removal and unwrapping
 * (see {@link parseCommandLine}); commands with no words (`x=1`) are left out. Undefined when
 * the line cannot be parsed.
 *
 * @example
 * ```ts
 * import { commandsOf } from "./shell.ts";
 * const commands = await commandsOf('make && echo "$(rm -rf build)" | xargs -0 rm');
 * const expected = [["make"], ["echo", "$(rm -rf build)"], ["rm", "-rf", "build"], ["rm"]];
 * if (JSON.stringify(commands) !== JSON.stringify(expected)) throw new Error("unexpected");
 * ```
 */
export async function commandsOf(line: string): Promise<string[][] | undefined> {
  const commands = await parseCommandLine(line);
  return commands?.filter((command) => command.words.length).map((command) => command.words);
}

interface _Scope {
  depth: number;
  wrappers: string[][];
  assignments: string[];
  /** What standard input holds, when the line says (a here-document); else unknown. */
  stdin?: ShellWord;
}

function _analyze(parse: BashParse, source: string, scope: _Scope, out: ShellCommand[]): boolean {
  const tree = parse(source);
  try {
    if (tree.root.hasError || !_covered(tree.root, source)) return false;
    _walk(parse, tree.root, scope, out);
    return true;
  } finally {
    tree.free();
  }
}

function _walk(parse: BashParse, node: Node, scope: _Scope, out: ShellCommand[]): void {
  if (node.type === "command") _command(parse, node, scope, out);
  if (node.type === "declaration_command" || node.type === "unset_command") {
    const keyword = node.children[0]?.text ?? node.type;
    const words = [keyword, ...wordsOf(node.namedChildren).map((word) => word.text)];
    const opaque = _startup(words);
    out.push({
      words,
      assignments: [...scope.assignments],
      wrappers: [...scope.wrappers],
      ...(opaque ? { opaque } : {}),
    });
  }
  if (node.type === "variable_assignment" && _standalone(node)) {
    const assignment = wordOf(node).text;
    const opaque = _startup([assignment]);
    out.push({
      words: [],
      assignments: [assignment],
      wrappers: [...scope.wrappers],
      ...(opaque ? { opaque } : {}),
    });
  }
  for (const child of node.children) _walk(parse, child, scope, out);
}

function _standalone(node: Node): boolean {
  const parent = node.parent?.type === "variable_assignments" ? node.parent.parent : node.parent;
  return !!parent && !/^(command|declaration_command|c_style_for_statement)$/.test(parent.type);
}

function _command(parse: BashParse, node: Node, scope: _Scope, out: ShellCommand[]): void {
  const assignments: string[] = [];
  const parts: Node[] = [];
  for (const child of node.children) {
    if (child.type === "variable_assignment") assignments.push(wordOf(child).text);
    else if (_descriptor(child)) continue; // the `0` of `0<<<`, which tree-sitter makes a word
    else if (!_REDIRECTS.has(child.type) && child.type !== "comment") parts.push(child);
  }
  const words = wordsOf(parts);
  // tree-sitter-bash reads the words after a redirection (`rm >/dev/null -rf /`) as more
  // redirection targets; they are arguments of the command.
  const parent = node.parent;
  const redirected = parent?.type === "redirected_statement" &&
    parent.childForFieldName("body")?.id === node.id;
  if (redirected) {
    // It also drops a lone `-` before `<<` (`python3 - <<EOF`).
    const next = node.nextSibling;
    if (next && /^\s*-\s*$/.test(_slice(node, node.endIndex, next.startIndex))) {
      words.push({ text: "-", dynamic: false, pattern: false });
    }
    for (const redirect of parent.children.filter((child) => child.type === "file_redirect")) {
      const targets = redirect.namedChildren.filter((child) => child.type !== "file_descriptor");
      words.push(...wordsOf(targets).slice(1));
    }
  }
  const statement = redirected ? parent : node;
  const redirects = [...node.children, ...(redirected ? parent.children : [])];
  const stdin = standardInput(statement, redirects, scope.stdin);
  _expand(parse, words, {
    ...scope,
    assignments: [...scope.assignments, ...assignments],
    stdin,
  }, out);
}

/** Whether a node is a file descriptor number written right before a redirection. */
function _descriptor(node: Node): boolean {
  const next = node.nextSibling ??
    (node.parent?.type === "command" ? node.parent.nextSibling : null);
  return node.type === "number" && !!next && next.startIndex === node.endIndex &&
    _REDIRECTS.has(next.type);
}

function _expand(parse: BashParse, words: ShellWord[], scope: _Scope, out: ShellCommand[]): void {
  const texts = words.map((word) => word.text);
  const push = (opaque?: string): ShellCommand => {
    const command: ShellCommand = {
      words: texts,
      assignments: scope.assignments,
      wrappers: scope.wrappers,
      ...(opaque ? { opaque } : {}),
    };
    out.push(command);
    return command;
  };
  if (!words.length) {
    if (scope.assignments.length) push();
    return;
  }
  if (words[0].dynamic || words[0].pattern) {
    push(`the command name ${words[0].text} is only known when the line runs`);
    return;
  }
  const shell = isShell(words[0].text);
  const startup = _startup(scope.assignments, shell);
  if (startup) {
    push(startup);
    return;
  }
  const found = unwrapCommand(words);
  if (!found) {
    push();
    return;
  }
  // The wrapper itself, when it is a command of its own or when what it runs is not known.
  let self = found.self ? push() : undefined;
  const mark = (field: "opaque" | "fromData", why: string): void => {
    self ??= push();
    self[field] ??= why;
  };
  const inner: _Scope = { ...scope, wrappers: [...scope.wrappers, texts] };
  const nested = { ...inner, depth: inner.depth + 1 };
  const deep = inner.depth >= _MAX_DEPTH ? `${words[0].text} nests command lines too deeply` : "";
  for (const run of found.runs) {
    if ("opaque" in run) mark("opaque", run.opaque);
    else if ("words" in run) {
      _expand(parse, run.words, {
        ...inner,
        assignments: [...scope.assignments, ...run.assignments],
      }, out);
    } else if ("script" in run) {
      const why = run.script.some((word) => word.dynamic)
        ? `${words[0].text} runs a command line only known when the line runs`
        : deep;
      const script = run.script.map((word) => word.text).join(" ");
      if (why || !_analyze(parse, script, nested, out)) {
        mark("opaque", why || `the command line given to ${words[0].text} cannot be parsed`);
      }
    } else {
      // A shell reading standard input: what it runs is seen only in a here-document.
      const given = scope.stdin;
      const seen = given && !given.dynamic && !deep &&
        _analyze(parse, given.text, { ...nested, stdin: undefined }, out);
      if (seen) mark("fromData", `${run.stdin} (a here-document, its program is data)`);
      else mark("opaque", run.stdin);
    }
  }
}

/**
 * Why setting these variables runs a file of their choosing in a shell (`BASH_ENV` in every
 * bash that starts, `ENV` in a shell's own), or "" when none does.
 */
function _startup(assignments: readonly string[], shell = false): string {
  const names = shell ? /^(BASH_ENV|ENV)=/ : /^BASH_ENV=/;
  const found = assignments.find((assignment) => names.test(assignment));
  return found ? `${found.slice(0, found.indexOf("="))} names a file that a shell runs first` : "";
}

/** The source text from `start` to `end`, both within `node`'s parent's tree. */
function _slice(node: Node, start: number, end: number): string {
  const root = node.tree.rootNode;
  return root.text.slice(start - root.startIndex, end - root.startIndex);
}

/** Nodes read as text as a whole: their children need not cover them. */
const _TEXT = new Set([
  "string",
  "raw_string",
  "ansi_c_string",
  "translated_string",
  "heredoc_body",
  "comment",
  "regex",
  "extglob_pattern",
]);

/**
 * Whether the tree accounts for every character of the source but spaces and line
 * continuations, so that nothing the shell would run goes unseen. (tree-sitter-bash drops a lone
 * `-` before `<<`; {@link _command} puts it back.)
 */
function _covered(root: Node, source: string): boolean {
  const spans: [number, number][] = [];
  const visit = (node: Node): void => {
    if (node.childCount === 0 || _TEXT.has(node.type)) spans.push([node.startIndex, node.endIndex]);
    else for (const child of node.children) visit(child);
  };
  visit(root);
  spans.push([source.length, source.length]);
  let at = 0;
  for (const [start, end] of spans) {
    const gap = source.slice(at, start);
    const dash = /^\s*-\s*$/.test(gap) && source.startsWith("<<", start);
    if (start > at && !/^(\s|\\\r?\n)*$/.test(gap) && !dash) return false;
    at = Math.max(at, end);
  }
  return true;
}
