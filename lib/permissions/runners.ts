/**
 * Runners whose syntax fits no option table: `busybox` and `toybox` (the applet is the
 * command), `sg` (a group, then a command line), and GNU `parallel` (a command line template,
 * then `:::` values, or command lines read from standard input).
 *
 * @module
 */

import { type OptionSpec, parseOptions } from "./wrapper_options.ts";
import {
  replaced,
  type ShellWord,
  unknownOption,
  type Unwrapped,
  type WrappedRun,
} from "./wrappers.ts";

/**
 * `busybox applet args…`: the applet runs; `busybox --list` and the like run nothing.
 *
 * @example
 * ```ts
 * import { busybox } from "./runners.ts";
 * const word = (text: string) => ({ text, dynamic: false, pattern: false });
 * const run = busybox(["rm", "x"].map(word)).runs[0];
 * if (!("words" in run) || run.words[0].text !== "rm") throw new Error("unexpected");
 * ```
 */
export function busybox(args: readonly ShellWord[]): Unwrapped {
  if (!args.length || args[0].text.startsWith("-")) return { self: true, runs: [] };
  return { self: false, runs: [{ words: [...args], assignments: [] }] };
}

/**
 * `sg [-] group [-c] 'command line'`: the command line runs in `sh -c`; without one, a shell
 * that reads standard input starts.
 *
 * @example
 * ```ts
 * import { sg } from "./runners.ts";
 * const word = (text: string) => ({ text, dynamic: false, pattern: false });
 * const run = sg(["wheel", "-c", "rm x"].map(word)).runs[0];
 * if (!("script" in run) || run.script[0].text !== "rm x") throw new Error("unexpected");
 * ```
 */
export function sg(args: readonly ShellWord[]): Unwrapped {
  let rest = args[0]?.text === "-" ? args.slice(1) : args;
  rest = rest.slice(1); // the group
  if (rest[0]?.text === "-c") rest = rest.slice(1);
  if (!rest.length) return { self: true, runs: [{ stdin: "sg starts a shell that reads stdin" }] };
  return { self: true, runs: [{ script: [rest[0]] }] };
}

const _PARALLEL: OptionSpec = {
  flags: "0kqvXmgurtp",
  values: "ajdCEILNnPSs",
  attached: "eil",
  long: {
    null: false,
    "arg-file": true,
    jobs: true,
    "max-procs": true,
    "keep-order": false,
    delimiter: true,
    colsep: true,
    "max-args": true,
    "max-replace-args": true,
    "max-lines": "optional",
    "max-chars": true,
    replace: "optional",
    eof: "optional",
    "dry-run": false,
    halt: true,
    joblog: true,
    bar: false,
    eta: false,
    progress: false,
    tag: false,
    tagstring: true,
    "line-buffer": false,
    ungroup: false,
    group: false,
    timeout: true,
    retries: true,
    "will-cite": false,
    quote: false,
    verbose: false,
    "no-run-if-empty": false,
    results: true,
    header: true,
    load: true,
    memfree: true,
    delay: true,
    shuf: false,
    nice: true,
    tmpdir: true,
    workdir: true,
    pipe: false,
    block: true,
    interactive: false,
    trim: true,
    semaphore: false,
    id: true,
    fg: false,
    bg: false,
    xargs: false,
  },
};

const _SOURCES = new Set([":::", "::::", ":::+", "::::+"]);
const _MAX_VALUES = 100;

/**
 * GNU `parallel` (and `sem`): its command words make one command line (run by a shell) that
 * each `:::` value is put into (for `{}`, or at the end), quoted; without command words, each
 * value is a command line of its own, and without values the command lines come from standard
 * input. Values from files (`::::`, `-a`) are data.
 *
 * @example
 * ```ts
 * import { parallel } from "./runners.ts";
 * const word = (text: string) => ({ text, dynamic: false, pattern: false });
 * const runs = parallel("parallel", ["gzip", ":::", "a", "b"].map(word)).runs;
 * const lines = runs.map((run) => "script" in run ? run.script[0].text : "");
 * if (lines.join() !== "gzip,gzip 'a',gzip 'b'") throw new Error(lines.join());
 * ```
 */
export function parallel(name: string, args: readonly ShellWord[]): Unwrapped {
  const parsed = parseOptions(args, _PARALLEL);
  if (!parsed) return unknownOption(name);
  if (parsed.none) return { self: true, runs: [] };
  const split = parsed.rest.findIndex((word) => _SOURCES.has(word.text));
  const template = parsed.rest.slice(0, split < 0 ? undefined : split);
  const sources = split < 0 ? [] : parsed.rest.slice(split);
  const values = sources.filter((word) => !_SOURCES.has(word.text)).slice(0, _MAX_VALUES);
  const files = parsed.given.has("a") || parsed.given.has("arg-file") ||
    sources.some((word) => word.text.startsWith("::::"));
  const runs: WrappedRun[] = [];
  if (!template.length) {
    if (files) runs.push({ opaque: `${name} runs command lines read from a file` });
    else if (!sources.length) runs.push({ stdin: `${name} runs the command lines of stdin` });
    for (const value of values) runs.push({ script: [value] });
    return { self: true, runs };
  }
  const replace = _replace(parsed.given);
  const text = template.map((word) => word.text).join(" ");
  const dynamic = template.some((word) => word.dynamic);
  if (parsed.given.has("q") || parsed.given.has("quote")) {
    runs.push({ words: replaced(template, replace), assignments: [] });
    return { self: true, runs };
  }
  // The template as it stands, its replacement string an expansion: a command name or a
  // command line made of it stays unknowable.
  const input = replace ? text.replaceAll(replace, "$parallel_input") : text;
  runs.push({ script: [{ text: input, dynamic, pattern: false }] });
  for (const value of values) {
    const quoted = `'${value.text.replaceAll("'", `'\\''`)}'`;
    const filled = text.includes(replace) ? text.replaceAll(replace, quoted) : `${text} ${quoted}`;
    runs.push({ script: [{ text: filled, dynamic: dynamic || value.dynamic, pattern: false }] });
  }
  return { self: true, runs };
}

function _replace(given: Map<string, ShellWord | true>): string {
  for (const key of ["I", "i", "replace"]) {
    const value = given.get(key);
    if (value) return value === true ? "{}" : value.text;
  }
  return "{}";
}
