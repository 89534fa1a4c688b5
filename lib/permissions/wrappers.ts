/**
 * Commands that run other commands (`sudo rm x`, `timeout 5 rm x`, `taskset 1 rm x`,
 * `bash -c 'rm x'`, `find -exec`): which words of theirs are the command they run, read with
 * each wrapper's own option syntax (`wrapper_specs.ts`). The permission rules see through
 * them. What a wrapper runs may also be data: a shell reading standard input, a script given as
 * `/dev/stdin`, `/dev/fd/3` or `<(…)`; such a run is marked, never guessed.
 *
 * @module
 */

import { posix } from "node:path";
import { type OptionSpec, parseOptions } from "./wrapper_options.ts";
import { SHELL_OPTIONS, WRAPPER_OPTIONS } from "./wrapper_specs.ts";
import { busybox, parallel, sg } from "./runners.ts";

/** A word of a command after quote removal. */
export interface ShellWord {
  /** The word as the command receives it; expansions keep their source text (`$HOME`). */
  text: string;
  /** Whether part of it is only known when the line runs (`$x`, `$(…)`, `` `…` ``). */
  dynamic: boolean;
  /** Whether it has unquoted glob or brace characters that the shell expands (`r?`, `{a,b}`). */
  pattern: boolean;
}

/**
 * What a wrapper runs: a command, a command line in a string, the command lines it reads from
 * standard input (`stdin`, with who reads them), or something unknowable (`opaque`, with why).
 */
export type WrappedRun =
  | { words: ShellWord[]; assignments: string[] }
  | { script: ShellWord[] }
  | { stdin: string }
  | { opaque: string };

/** What {@link unwrapCommand} found. */
export interface Unwrapped {
  /** Whether the wrapper is a command of its own too (`find -exec`, `sudo -l`, `env`). */
  self: boolean;
  /** What it runs. */
  runs: WrappedRun[];
}

const _SHELLS = new Set([
  "bash",
  "sh",
  "dash",
  "zsh",
  "ksh",
  "mksh",
  "ash",
  "hush",
  "yash",
  "posh",
]);

/** Wrappers that start an interactive shell, reading standard input, when given no command. */
const _BARE_SHELL = new Set(["chroot", "fakeroot", "nsenter", "pkexec", "script", "unshare"]);

/** Words before the command: a duration, `NAME=value` words, one operand, a priority. */
const _BEFORE: Record<string, "duration" | "assignments" | "operand" | "priority"> = {
  timeout: "duration",
  env: "assignments",
  sudo: "assignments",
  taskset: "operand",
  chroot: "operand",
  flock: "operand",
  chrt: "priority",
};

/**
 * Commands that raise privileges or leave the agent's confinement (another user, another root,
 * other namespaces): an allow rule must allow the wrapper too.
 */
export const PRIVILEGED: ReadonlySet<string> = new Set([
  "sudo",
  "doas",
  "su",
  "pkexec",
  "runuser",
  "setpriv",
  "sg",
  "chroot",
  "nsenter",
  "unshare",
  "systemd-run",
]);

/**
 * What a wrapper command runs, or undefined when `words[0]` is not a wrapper. Wrappers: `env`,
 * `timeout`, `nice`, `ionice`, `nohup`, `time`, `command`, `builtin`, `exec`, `xargs`, `sudo`,
 * `doas`, `su`, `runuser`, `sg`, `pkexec`, `setpriv`, `stdbuf`, `setsid`, `chronic`, `watch`,
 * `strace`, `ltrace`, `coproc`, `taskset`, `flock`, `chrt`, `prlimit`, `numactl`, `unshare`,
 * `nsenter`, `chroot`, `script`, `systemd-run`, `fakeroot`, `eatmydata`, `firejail`,
 * `valgrind`, `busybox`, `toybox`, `parallel`, `eval`, `trap` and `alias` (their command lines
 * run later), `find -exec/-execdir/-ok/-okdir`, `source` and `.`, and the shells (`bash`, `sh`,
 * `dash`, `zsh`, …: with `-c` they run a command line; with a script that is data — standard
 * input, `/dev/stdin`, `/dev/fd/N`, `<(…)` — they run data). An option a wrapper is not known
 * to take makes the run unknowable.
 *
 * @example
 * ```ts
 * import { unwrapCommand } from "./wrappers.ts";
 * const word = (text: string) => ({ text, dynamic: false, pattern: false });
 * const found = unwrapCommand(["sudo", "-u", "root", "rm", "x"].map(word));
 * const run = found?.runs[0];
 * if (!run || !("words" in run) || run.words[0].text !== "rm") throw new Error("unexpected");
 * const stdin = unwrapCommand(["bash", "/dev/stdin"].map(word))?.runs[0];
 * if (!stdin || !("stdin" in stdin)) throw new Error("unexpected");
 * ```
 */
export function unwrapCommand(words: readonly ShellWord[]): Unwrapped | undefined {
  const name = words[0].text.split("/").pop()!;
  const args = words.slice(1);
  if (name === "eval") return { self: false, runs: [{ script: args }] };
  if (name === "trap" || name === "alias") return _later(name, args);
  if (name === "find") return _find(args);
  if (name === "source" || name === ".") return _source(name, args);
  if (_SHELLS.has(name)) return _shell(name, args);
  if (name === "busybox" || name === "toybox") return busybox(args);
  if (name === "parallel" || name === "sem") return parallel(name, args);
  if (name === "sg") return sg(args);
  const spec: OptionSpec | undefined = Object.hasOwn(WRAPPER_OPTIONS, name)
    ? WRAPPER_OPTIONS[name]
    : undefined;
  if (!spec) return undefined;
  const parsed = parseOptions(args, spec);
  if (!parsed) return unknownOption(name);
  if (parsed.none) return { self: true, runs: [] };
  if (parsed.splits.length) {
    // env -S "cmd args" splits its string into words: read it as a command line.
    return { self: false, runs: [{ script: [...parsed.splits, ...parsed.rest] }] };
  }
  if (parsed.scripts.length) {
    return { self: true, runs: parsed.scripts.map((s) => ({ script: [s] })) };
  }
  let rest = parsed.rest;
  const assignments: string[] = [];
  const before = _BEFORE[name];
  if (before === "duration" || before === "operand") rest = rest.slice(1);
  if (before === "priority" && /^-?\d+$/.test(rest[0]?.text ?? "")) rest = rest.slice(1);
  if (before === "assignments") {
    while (rest.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(rest[0].text)) {
      assignments.push(rest[0].text);
      rest = rest.slice(1);
    }
  }
  if (name === "flock" && /^(-c|--command)$/.test(rest[0]?.text ?? "")) {
    return { self: true, runs: rest[1] ? [{ script: [rest[1]] }] : [] };
  }
  if (name === "su" || name === "runuser") {
    return _su(name, rest, parsed.given.has("u") || parsed.given.has("user"));
  }
  if (name === "watch" && !parsed.given.has("x") && !parsed.given.has("exec") && rest.length) {
    // Without -x, watch gives its words to `sh -c` as one command line.
    return { self: false, runs: [{ script: rest }] };
  }
  if (name === "xargs") rest = replaced(rest, _replaceString(parsed.given));
  if (name === "script") rest = []; // its words are log files; without -c it starts a shell
  if (!rest.length) {
    const shell = parsed.shell || _BARE_SHELL.has(name);
    return {
      self: true,
      runs: shell ? [{ stdin: `${name} starts a shell that reads stdin` }] : [],
    };
  }
  return { self: false, runs: [{ words: rest, assignments }] };
}

/**
 * Whether a command word names a shell (`bash`, `/bin/sh`, `dash`, …).
 *
 * @example
 * ```ts
 * import { isShell } from "./wrappers.ts";
 * if (!isShell("/usr/bin/bash") || isShell("node")) throw new Error("unexpected");
 * ```
 */
export function isShell(word: string): boolean {
  return _SHELLS.has(word.split("/").pop()!);
}

/** What a wrapper with an option not known here runs: unknowable. */
export function unknownOption(name: string): Unwrapped {
  return { self: true, runs: [{ opaque: `${name} has an option not known here` }] };
}

/**
 * The words with those holding `replace` (the string `xargs -I` or `find -exec` puts the input
 * in) marked as only known when the line runs.
 */
export function replaced(words: readonly ShellWord[], replace?: string): ShellWord[] {
  if (!replace) return [...words];
  return words.map((word) => word.text.includes(replace) ? { ...word, dynamic: true } : word);
}

function _replaceString(given: Map<string, ShellWord | true>): string | undefined {
  for (const key of ["I", "i", "replace"]) {
    const value = given.get(key);
    if (value) return value === true ? "{}" : value.text;
  }
  return undefined;
}

/**
 * A script path that is data: standard input (`/dev/stdin`, `/dev/fd/0`, `/proc/self/fd/0`),
 * another descriptor, a socket, or a path only known when the line runs (`<(…)`, `$f`).
 */
function _dataProgram(name: string, path: ShellWord): WrappedRun | undefined {
  if (path.dynamic) return { opaque: `${name} runs a program given as data (${path.text})` };
  const normal = posix.normalize(path.text);
  if (/(^|\/)dev\/(stdin|fd\/0)$|(^|\/)proc\/[^/]+\/fd\/0$/.test(normal)) {
    return { stdin: `${name} runs ${path.text}, its standard input` };
  }
  if (/(^|\/)dev\/(fd|tcp|udp)\/|(^|\/)proc\/[^/]+\/fd\/|(^|\/)dev\/tty/.test(normal)) {
    return { opaque: `${name} runs a program given as data (${path.text})` };
  }
  return undefined;
}

function _shell(name: string, args: readonly ShellWord[]): Unwrapped | undefined {
  const parsed = parseOptions(args, SHELL_OPTIONS);
  if (!parsed) return unknownOption(name);
  if (parsed.none) return { self: true, runs: [] };
  // A start-up file that is data runs before anything else.
  const startup = parsed.given.get("rcfile") ?? parsed.given.get("init-file");
  const data = startup === undefined || startup === true ? undefined : _dataProgram(name, startup);
  if (data) return { self: true, runs: ["stdin" in data ? { opaque: data.stdin } : data] };
  const [first] = parsed.rest;
  if (parsed.given.has("c")) {
    const why = `${name} -c is given its command line only when the line runs`;
    return { self: false, runs: [first ? { script: [first] } : { opaque: why }] };
  }
  if (!first || parsed.given.has("s")) {
    return { self: true, runs: [{ stdin: `${name} reads its commands from standard input` }] };
  }
  const script = _dataProgram(name, first);
  return script ? { self: true, runs: [script] } : undefined; // `bash x.sh`: a command like any other
}

function _source(name: string, args: readonly ShellWord[]): Unwrapped | undefined {
  const path = args[0]?.text === "--" ? args[1] : args[0];
  const data = path && _dataProgram(name, path);
  return data ? { self: true, runs: [data] } : undefined;
}

/** `su` and `runuser`: `-c` runs a command line; `runuser -u` runs its words; else a shell. */
function _su(name: string, rest: readonly ShellWord[], user: boolean): Unwrapped {
  if (user && rest.length) return { self: false, runs: [{ words: [...rest], assignments: [] }] };
  // `su user args…` gives the args to the user's shell.
  const shell = rest.length > 1 ? _shell("sh", rest.slice(1)) : undefined;
  if (shell) return { self: true, runs: shell.runs };
  if (rest.length > 1) return { self: true, runs: [] }; // a script file, run by the shell
  return { self: true, runs: [{ stdin: `${name} starts a shell that reads stdin` }] };
}

/** `trap 'cmd' EXIT` and `alias x='cmd'` keep command lines that run later. */
function _later(name: string, args: readonly ShellWord[]): Unwrapped {
  const rest = args[0]?.text === "--" ? args.slice(1) : args;
  if (name === "trap") {
    const action = rest[0];
    const runs = action && !/^-[lp]?$/.test(action.text) && rest.length > 1
      ? [{ script: [action] }]
      : [];
    return { self: true, runs };
  }
  const runs = rest.filter((arg) => arg.text.includes("=")).map((arg) => ({
    script: [{ ...arg, text: arg.text.slice(arg.text.indexOf("=") + 1) }],
  }));
  return { self: true, runs };
}

/** `find -exec cmd {} ;`: the file names it puts for `{}` are data. */
function _find(args: readonly ShellWord[]): Unwrapped {
  const runs: WrappedRun[] = [];
  for (let i = 0; i < args.length; i++) {
    if (!/^-(exec|execdir|ok|okdir)$/.test(args[i].text)) continue;
    const start = i + 1;
    let end = start;
    while (end < args.length && args[end].text !== ";" && args[end].text !== "+") end++;
    if (end > start) runs.push({ words: replaced(args.slice(start, end), "{}"), assignments: [] });
    i = end;
  }
  return { self: true, runs };
}
