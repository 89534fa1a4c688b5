/**
 * Commands that run other commands (`sudo rm x`, `timeout 5 rm x`, `bash -c 'rm x'`, `find -exec`):
 * which words of theirs are the command they run. The permission rules see through them.
 *
 * @module
 */

/** A word of a command after quote removal. */
export interface ShellWord {
  /** The word as the command receives it; expansions keep their source text (`$HOME`). */
  text: string;
  /** Whether part of it is only known when the line runs (`$x`, `$(…)`, `` `…` ``). */
  dynamic: boolean;
  /** Whether it has unquoted glob or brace characters that the shell expands (`r?`, `{a,b}`). */
  pattern: boolean;
}

/** What a wrapper runs: a command, a command line in a string, or something unknowable. */
export type WrappedRun =
  | { words: ShellWord[]; assignments: string[] }
  | { script: ShellWord[] }
  | { opaque: string };

/** What {@link unwrapCommand} found. */
export interface Unwrapped {
  /** Whether the wrapper is a command of its own too (`find -exec`, `sudo -l`, `env`). */
  self: boolean;
  /** What it runs. */
  runs: WrappedRun[];
}

interface _Spec {
  /** Short options without a value. */
  flags?: string;
  /** Short options with a value (attached or the next word). */
  values?: string;
  /** Short options whose optional value can only be attached (`xargs -i{}`). */
  attached?: string;
  /** Long options: true when they take a value (`--user root` or `--user=root`). */
  long?: Record<string, boolean>;
  /** Options after which nothing is run (`sudo -l`, `command -v`, `ionice -p`). */
  none?: string;
  /** Words before the command: "duration" for timeout, "assignments" for env and sudo. */
  then?: "duration" | "assignments";
  /** Whether `+o`-style words are options too (the shells), or `-` alone is one (env). */
  plus?: boolean;
  dash?: boolean;
}

const _SHELL: _Spec = {
  flags: "abcefhiklmnprstuvxBCEHPT",
  values: "oO",
  plus: true,
  long: {
    login: false,
    norc: false,
    noprofile: false,
    posix: false,
    restricted: false,
    verbose: false,
    rcfile: true,
    "init-file": true,
    version: false,
    help: false,
  },
};

// Each wrapper's options, from its manual page (GNU coreutils, sudo, util-linux, procps).
const _SPECS: Record<string, _Spec> = {
  builtin: {},
  chronic: { flags: "ev" },
  command: { flags: "pvV", none: "vV" },
  coproc: {},
  doas: { flags: "ns", values: "uC", none: "C" },
  env: {
    flags: "i0v",
    values: "uCS",
    long: { "ignore-environment": false, null: false, debug: false, unset: true, chdir: true },
    then: "assignments",
    dash: true,
  },
  exec: { flags: "cl", values: "a" },
  ionice: { flags: "t", values: "cnpPu", none: "pPu", long: { class: true, classdata: true } },
  ltrace: { flags: "bcCfhiLrStTV", values: "aAeFlnopsuwxD", none: "p" },
  nice: { values: "n", long: { adjustment: true } },
  nohup: {},
  pkexec: { long: { user: true, "disable-internal-agent": false, "keep-cwd": false } },
  setsid: { flags: "cfw", long: { ctty: false, fork: false, wait: false } },
  stdbuf: { values: "ioe", long: { input: true, output: true, error: true } },
  strace: { flags: "cCdDfFhikqrtTvVwxyYzZ", values: "abeEIoOpPsSuUX", none: "p" },
  sudo: {
    flags: "AbEHhiKklnPSsVv",
    values: "CDgpRrTtUu",
    none: "eKklVv",
    long: {
      user: true,
      group: true,
      chdir: true,
      login: false,
      shell: false,
      "non-interactive": false,
      "preserve-env": false,
      "set-home": false,
      stdin: false,
      prompt: true,
    },
    then: "assignments",
  },
  time: { flags: "apqv", values: "fo", long: { format: true, output: true, append: false } },
  timeout: {
    flags: "v",
    values: "ks",
    long: { "kill-after": true, signal: true, "preserve-status": false, foreground: false },
    then: "duration",
  },
  xargs: {
    flags: "0oprtx",
    values: "adEILnPs",
    attached: "eil",
    long: {
      null: false,
      "arg-file": true,
      delimiter: true,
      "max-args": true,
      "max-lines": true,
      "max-procs": true,
      "no-run-if-empty": false,
      verbose: false,
    },
  },
};

const _SHELLS = new Set(["bash", "sh", "dash", "zsh", "ksh", "mksh", "ash"]);

/** Whether a command name raises privileges: its wrapper must be allowed too. */
export const PRIVILEGED: ReadonlySet<string> = new Set(["sudo", "doas", "su", "pkexec"]);

/**
 * What a wrapper command runs, or undefined when `words[0]` is not a wrapper. Wrappers: `env`,
 * `timeout`, `nice`, `ionice`, `nohup`, `time`, `command`, `builtin`, `exec`, `xargs`, `sudo`,
 * `doas`, `su -c`, `pkexec`, `stdbuf`, `setsid`, `chronic`, `watch`, `strace`, `ltrace`,
 * `coproc`, `eval`, `trap` and `alias` (their command lines run later), `find -exec/-execdir/
 * -ok/-okdir`, and the shells `bash`, `sh`, `dash`,
 * `zsh`, `ksh`, `mksh`, `ash` (with `-c`; without it they run a script file, or read standard
 * input, which is unknowable). An option a wrapper is not known to take makes the run unknowable.
 *
 * @example
 * ```ts
 * import { unwrapCommand } from "./wrappers.ts";
 * const word = (text: string) => ({ text, dynamic: false, pattern: false });
 * const found = unwrapCommand(["sudo", "-u", "root", "rm", "x"].map(word));
 * const run = found?.runs[0];
 * if (!run || !("words" in run) || run.words[0].text !== "rm") throw new Error("unexpected");
 * ```
 */
export function unwrapCommand(words: readonly ShellWord[]): Unwrapped | undefined {
  const name = words[0].text.split("/").pop()!;
  const args = words.slice(1);
  if (name === "eval") return { self: false, runs: [{ script: args }] };
  if (name === "trap" || name === "alias") return _later(name, args);
  if (name === "find") return _find(args);
  if (name === "watch") return _watch(args);
  if (name === "su") return _su(args);
  if (_SHELLS.has(name)) return _shell(name, args);
  const spec = Object.hasOwn(_SPECS, name) ? _SPECS[name] : undefined;
  if (!spec) return undefined;
  const parsed = _options(args, spec);
  if (!parsed) return _unknown(name);
  if (parsed.split !== undefined) {
    // env -S "cmd args" splits its string into words: read it as a command line.
    return { self: false, runs: [{ script: [parsed.split, ...args.slice(parsed.index)] }] };
  }
  let index = parsed.index;
  const assignments: string[] = [];
  if (spec.then === "duration") index++;
  if (spec.then === "assignments") {
    while (index < args.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(args[index].text)) {
      assignments.push(args[index++].text);
    }
  }
  if (parsed.none || index >= args.length) return { self: true, runs: [] };
  return { self: false, runs: [{ words: args.slice(index), assignments }] };
}

function _unknown(name: string): Unwrapped {
  return {
    self: true,
    runs: [{ opaque: `${name} has an option not known here` }],
  };
}

interface _Parsed {
  index: number;
  none: boolean;
  split?: ShellWord;
}

function _options(args: readonly ShellWord[], spec: _Spec): _Parsed | undefined {
  let none = false;
  let split: ShellWord | undefined;
  let index = 0;
  for (; index < args.length; index++) {
    const arg = args[index].text;
    if (arg === "--") return { index: index + 1, none, split };
    if (arg === "-" && spec.dash) continue;
    const option = arg.startsWith("-") || (spec.plus && arg.startsWith("+"));
    if (!option || arg.length < 2) break;
    if (args[index].dynamic) return undefined;
    if (arg.startsWith("--")) {
      const [key, value] = arg.slice(2).split(/=(.*)/s);
      if (!spec.long || !Object.hasOwn(spec.long, key)) return undefined;
      if (spec.long[key] && value === undefined) index++;
      continue;
    }
    if (/^-\d+$/.test(arg) && spec.long && Object.hasOwn(spec.long, "adjustment")) continue;
    for (let i = 1; i < arg.length; i++) {
      const letter = arg[i];
      if (spec.none?.includes(letter)) none = true;
      if (spec.flags?.includes(letter)) continue;
      if (spec.attached?.includes(letter)) break;
      if (!spec.values?.includes(letter)) return undefined;
      const attached = i + 1 < arg.length;
      const value = attached ? { ...args[index], text: arg.slice(i + 1) } : args[++index];
      if (letter === "S" && value) split = value;
      break;
    }
  }
  return { index: Math.min(index, args.length), none, split };
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

function _find(args: readonly ShellWord[]): Unwrapped {
  const runs: WrappedRun[] = [];
  for (let i = 0; i < args.length; i++) {
    if (!/^-(exec|execdir|ok|okdir)$/.test(args[i].text)) continue;
    const start = i + 1;
    let end = start;
    while (end < args.length && args[end].text !== ";" && args[end].text !== "+") end++;
    if (end > start) runs.push({ words: args.slice(start, end), assignments: [] });
    i = end;
  }
  return { self: true, runs };
}

function _watch(args: readonly ShellWord[]): Unwrapped {
  const parsed = _options(args, {
    flags: "bcCdegprtwx",
    values: "nq",
    long: { interval: true, exec: false, differences: false, "no-title": false },
  });
  if (!parsed) return _unknown("watch");
  const rest = args.slice(parsed.index);
  if (!rest.length) return { self: true, runs: [] };
  const exec = args.slice(0, parsed.index).some((arg) => /^(-[^-]*x|--exec$)/.test(arg.text));
  // Without -x, watch gives its words to `sh -c` as one command line.
  return { self: false, runs: [exec ? { words: rest, assignments: [] } : { script: rest }] };
}

function _su(args: readonly ShellWord[]): Unwrapped {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i].text;
    if (arg === "-c" || arg === "--command") return { self: true, runs: _scriptAt(args, i + 1) };
    if (arg.startsWith("--command=")) {
      return { self: true, runs: [{ script: [{ ...args[i], text: arg.slice(10) }] }] };
    }
  }
  return { self: true, runs: [{ opaque: "su without -c reads its commands from standard input" }] };
}

function _shell(name: string, args: readonly ShellWord[]): Unwrapped | undefined {
  const parsed = _options(args, _SHELL);
  if (!parsed) return _unknown(name);
  const options = args.slice(0, parsed.index).map((arg) => arg.text);
  if (options.includes("--version") || options.includes("--help")) return { self: true, runs: [] };
  if (options.some((option) => /^-[^-]*c/.test(option))) {
    return { self: false, runs: _scriptAt(args, parsed.index) };
  }
  if (parsed.index < args.length && !options.some((option) => /^-[^-]*s/.test(option))) {
    return undefined; // `bash script.sh`: a command like any other.
  }
  return {
    self: true,
    runs: [{ opaque: `${name} reads its commands from standard input` }],
  };
}

function _scriptAt(args: readonly ShellWord[], index: number): WrappedRun[] {
  return index < args.length ? [{ script: [args[index]] }] : [];
}
