/**
 * The option syntax of commands that run other commands, from their manual pages (GNU
 * coreutils, util-linux, sudo, procps, systemd), and the parser that reads a wrapper's options
 * the way the wrapper itself does: options that take a value take it (attached or as the next
 * word), and an option the wrapper is not known to take makes the words unreadable rather than
 * guessed.
 *
 * @module
 */

import type { ShellWord } from "./wrappers.ts";

/** How a wrapper reads its options. */
export interface OptionSpec {
  /** Short options without a value. */
  flags?: string;
  /** Short options with a value (attached, or the next word). */
  values?: string;
  /** Short options whose optional value can only be attached (`xargs -i{}`, `nsenter -m/x`). */
  attached?: string;
  /** Long options: `true` takes a value (`--user root`, `--user=root`), `"optional"` only after `=`. */
  long?: Readonly<Record<string, boolean | "optional">>;
  /** Options (a letter or a long name) after which nothing is run (`sudo -l`, `taskset -p`). */
  none?: readonly string[];
  /** Options that make it run an interactive shell, which reads standard input (`sudo -s`). */
  shell?: readonly string[];
  /** Options whose value is a command line run by a shell (`script -c`, `su -c`). */
  script?: readonly string[];
  /** Options whose value is split into a command's words (`env -S`). */
  split?: readonly string[];
  /** Whether `+o`-style words are options too (the shells). */
  plus?: boolean;
  /** What `-` alone is: an option to skip (`env -`), or the end of the options (the shells). */
  dash?: "skip" | "end";
  /** Whether options may follow other words (GNU getopt's default: `script log -c cmd`). */
  permute?: boolean;
  /** Whether `-10` is an option (`nice -10`). */
  numeric?: boolean;
  /** Whether every option is one word, `--name` or `--name=value` (firejail, valgrind). */
  single?: boolean;
}

/** What {@link parseOptions} read. */
export interface ParsedOptions {
  /** The words that are not options, in order (from the first one on, unless it permutes). */
  rest: ShellWord[];
  /** The options given, by letter or long name, with their values. */
  given: Map<string, ShellWord | true>;
  /** Whether an option says nothing is run. */
  none: boolean;
  /** Whether an option starts an interactive shell. */
  shell: boolean;
  /** The values of options that hold a command line. */
  scripts: ShellWord[];
  /** The values of options that hold a command to split into words. */
  splits: ShellWord[];
}

/**
 * Reads a wrapper's options, or undefined when one of them is not known, lacks its value, or is
 * only known when the line runs. `--` ends the options; `--help` and `--version` run nothing.
 *
 * @example
 * ```ts
 * import { parseOptions, WRAPPER_OPTIONS } from "./wrapper_options.ts";
 * const word = (text: string) => ({ text, dynamic: false, pattern: false });
 * const parsed = parseOptions(["-s", "KILL", "5", "rm", "x"].map(word), WRAPPER_OPTIONS.timeout);
 * if (parsed?.rest.map((w) => w.text).join(" ") !== "5 rm x") throw new Error("unexpected");
 * if (parseOptions([word("--weird")], WRAPPER_OPTIONS.timeout) !== undefined) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function parseOptions(
  args: readonly ShellWord[],
  spec: OptionSpec,
): ParsedOptions | undefined {
  const out: ParsedOptions = {
    rest: [],
    given: new Map(),
    none: false,
    shell: false,
    scripts: [],
    splits: [],
  };
  const record = (key: string, value?: ShellWord): void => {
    out.given.set(key, value ?? true);
    if (spec.none?.includes(key)) out.none = true;
    if (spec.shell?.includes(key)) out.shell = true;
    if (value && spec.script?.includes(key)) out.scripts.push(value);
    if (value && spec.split?.includes(key)) out.splits.push(value);
  };
  for (let index = 0; index < args.length; index++) {
    const word = args[index];
    const arg = word.text;
    if (arg === "--" || (arg === "-" && spec.dash === "end")) {
      out.rest.push(...args.slice(index + 1));
      return out;
    }
    if (arg === "-" && spec.dash === "skip") continue;
    const option = arg.length > 1 && (arg.startsWith("-") || (!!spec.plus && arg.startsWith("+")));
    if (!option) {
      if (!spec.permute) {
        out.rest.push(...args.slice(index));
        return out;
      }
      out.rest.push(word);
      continue;
    }
    if (word.dynamic) return undefined;
    if (arg.startsWith("--")) {
      const [key, value] = arg.slice(2).split(/=(.*)/s);
      const attached = value === undefined ? undefined : { ...word, text: value };
      if (spec.single || ((key === "help" || key === "version") && !spec.long?.[key])) {
        record(key, attached);
        if (key === "help" || key === "version") out.none = true;
        continue;
      }
      const takes = spec.long && Object.hasOwn(spec.long, key) ? spec.long[key] : undefined;
      if (takes === undefined || (takes === false && attached)) return undefined;
      const given = takes === true && !attached ? args[++index] : attached;
      if (takes === true && !given) return undefined;
      record(key, given);
      continue;
    }
    if (spec.numeric && /^-\d+$/.test(arg)) continue;
    for (let i = 1; i < arg.length; i++) {
      const letter = arg[i];
      if (spec.flags?.includes(letter)) {
        record(letter);
        continue;
      }
      const rest = i + 1 < arg.length ? { ...word, text: arg.slice(i + 1) } : undefined;
      if (spec.attached?.includes(letter)) {
        record(letter, rest);
        break;
      }
      if (!spec.values?.includes(letter)) return undefined;
      const given = rest ?? args[++index];
      if (!given) return undefined;
      record(letter, given);
      break;
    }
  }
  return out;
}

/** The shells' options: `-c` runs its first word, `-s` (or no script) reads standard input. */
export const SHELL_OPTIONS: OptionSpec = {
  flags: "abcefhiklmnprstuvxBCEHPT",
  values: "oO",
  plus: true,
  dash: "end",
  long: {
    login: false,
    norc: false,
    noprofile: false,
    posix: false,
    restricted: false,
    verbose: false,
    rcfile: true,
    "init-file": true,
    debugger: false,
    "dump-strings": false,
    noediting: false,
    "pretty-print": false,
  },
};

const _SU: OptionSpec = {
  flags: "flmpPhV",
  values: "cgGswu",
  dash: "skip",
  permute: true,
  script: ["c", "command", "session-command"],
  long: {
    command: true,
    "session-command": true,
    fast: false,
    group: true,
    "supp-group": true,
    login: false,
    "preserve-environment": false,
    pty: false,
    shell: true,
    "whitelist-environment": true,
    user: true,
  },
};

const _NAMESPACES = ["mount", "uts", "ipc", "net", "pid", "user", "cgroup", "time"];
const _optional = (names: readonly string[]) =>
  Object.fromEntries(names.map((name) => [name, "optional" as const]));

/** Each wrapper's options, by command name. */
export const WRAPPER_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  builtin: {},
  chronic: { flags: "ev" },
  chroot: { long: { groups: true, userspec: true, "skip-chdir": false } },
  chrt: {
    flags: "abdfimoprRv",
    values: "TPD",
    none: ["m", "p", "max", "pid"],
    long: {
      "all-tasks": false,
      batch: false,
      deadline: false,
      fifo: false,
      idle: false,
      other: false,
      rr: false,
      "reset-on-fork": false,
      "sched-runtime": true,
      "sched-period": true,
      "sched-deadline": true,
      max: false,
      pid: false,
      verbose: false,
    },
  },
  command: { flags: "pvV", none: ["v", "V"] },
  coproc: {},
  doas: { flags: "Lns", values: "aCu", none: ["C", "L"], shell: ["s"] },
  eatmydata: {},
  env: {
    flags: "i0v",
    values: "uCSa",
    dash: "skip",
    split: ["S", "split-string"],
    long: {
      "ignore-environment": false,
      null: false,
      debug: false,
      unset: true,
      chdir: true,
      "split-string": true,
      argv0: true,
      "block-signal": "optional",
      "default-signal": "optional",
      "ignore-signal": "optional",
      "list-signal-handling": false,
    },
  },
  exec: { flags: "cl", values: "a" },
  fakeroot: {
    flags: "uhv",
    values: "lisb",
    long: { lib: true, faked: true, "unknown-is-real": false, "fd-base": true },
  },
  firejail: { single: true },
  flock: {
    flags: "sexnoFuhV",
    values: "wE",
    long: {
      shared: false,
      exclusive: false,
      unlock: false,
      nonblock: false,
      timeout: true,
      "conflict-exit-code": true,
      close: false,
      "no-fork": false,
      verbose: false,
    },
  },
  ionice: {
    flags: "t",
    values: "cnpPu",
    none: ["p", "P", "u", "pid", "pgid", "uid"],
    long: { class: true, classdata: true, ignore: false, pid: true, pgid: true, uid: true },
  },
  ltrace: { flags: "bcCfhiLrStTV", values: "aAeFlnopsuwxD", none: ["p"] },
  nice: { values: "n", numeric: true, long: { adjustment: true } },
  nohup: {},
  nsenter: {
    flags: "aFZ",
    values: "tSGW",
    attached: "muinpCUTrw",
    long: {
      all: false,
      target: true,
      ..._optional([..._NAMESPACES, "root", "wd"]),
      setuid: true,
      setgid: true,
      "preserve-credentials": false,
      wdns: true,
      "no-fork": false,
      "follow-context": false,
    },
  },
  numactl: {
    flags: "alsHb",
    values: "ipCNmP",
    none: ["s", "H", "show", "hardware"],
    long: {
      all: false,
      interleave: true,
      preferred: true,
      "preferred-many": true,
      physcpubind: true,
      cpunodebind: true,
      membind: true,
      localalloc: false,
      show: false,
      hardware: false,
      balancing: false,
    },
  },
  pkexec: { long: { user: true, "disable-internal-agent": false, "keep-cwd": false } },
  prlimit: {
    values: "po",
    attached: "cdefilmnqrstuvxy",
    none: ["p", "pid"],
    long: {
      pid: true,
      output: true,
      noheadings: false,
      raw: false,
      verbose: false,
      ..._optional([
        "core",
        "data",
        "nice",
        "fsize",
        "sigpending",
        "memlock",
        "rss",
        "nofile",
        "msgqueue",
        "rtprio",
        "stack",
        "cpu",
        "nproc",
        "as",
        "locks",
        "rttime",
      ]),
    },
  },
  runuser: _SU,
  script: {
    flags: "aefqhV",
    values: "IOBTmEoc",
    attached: "t",
    permute: true,
    script: ["c", "command"],
    long: {
      "log-in": true,
      "log-out": true,
      "log-io": true,
      "log-timing": true,
      timing: "optional",
      "logging-format": true,
      append: false,
      command: true,
      return: false,
      flush: false,
      force: false,
      echo: true,
      "output-limit": true,
      quiet: false,
    },
  },
  setpriv: {
    flags: "d",
    none: ["d", "dump"],
    long: {
      dump: false,
      nnp: false,
      "no-new-privs": false,
      "ambient-caps": true,
      "inh-caps": true,
      "bounding-set": true,
      ruid: true,
      euid: true,
      rgid: true,
      egid: true,
      reuid: true,
      regid: true,
      "clear-groups": false,
      "keep-groups": false,
      "init-groups": false,
      groups: true,
      securebits: true,
      pdeathsig: true,
      "selinux-label": true,
      "apparmor-profile": true,
      "landlock-access": true,
      "landlock-rule": true,
      "reset-env": false,
    },
  },
  setsid: { flags: "cfw", long: { ctty: false, fork: false, wait: false } },
  stdbuf: { values: "ioe", long: { input: true, output: true, error: true } },
  strace: { flags: "cCdDfFhikqrtTvVwxyYzZ", values: "abeEIoOpPsSuUX", none: ["p"] },
  su: _SU,
  sudo: {
    flags: "ABbEHiKklNnPSsVv",
    values: "aCcDgpRrTtUu",
    attached: "h",
    none: ["e", "K", "k", "l", "V", "v", "edit", "list", "validate"],
    shell: ["i", "s", "login", "shell"],
    long: {
      "askpass": false,
      bell: false,
      background: false,
      "close-from": true,
      chdir: true,
      chroot: true,
      "preserve-env": "optional",
      edit: false,
      group: true,
      "set-home": false,
      host: true,
      login: false,
      "remove-timestamp": false,
      "reset-timestamp": false,
      list: false,
      "no-update": false,
      "non-interactive": false,
      "preserve-groups": false,
      prompt: true,
      role: true,
      stdin: false,
      shell: false,
      type: true,
      "command-timeout": true,
      "other-user": true,
      user: true,
      validate: false,
    },
  },
  "systemd-run": {
    flags: "hrdtPqGS",
    values: "HMupE",
    shell: ["S", "shell"],
    long: {
      "no-ask-password": false,
      user: false,
      system: false,
      host: true,
      machine: true,
      scope: false,
      unit: true,
      property: true,
      description: true,
      slice: true,
      "slice-inherit": false,
      "no-block": false,
      "remain-after-exit": false,
      wait: false,
      "send-sighup": false,
      "service-type": true,
      uid: true,
      gid: true,
      nice: true,
      "working-directory": true,
      "same-dir": false,
      setenv: true,
      pty: false,
      pipe: false,
      quiet: false,
      collect: false,
      shell: false,
      "path-property": true,
      "socket-property": true,
      "timer-property": true,
      "on-active": true,
      "on-boot": true,
      "on-startup": true,
      "on-unit-active": true,
      "on-unit-inactive": true,
      "on-calendar": true,
      "on-timezone-change": false,
      "on-clock-change": false,
    },
  },
  taskset: {
    flags: "acp",
    none: ["p", "pid"],
    long: { "all-tasks": false, pid: false, "cpu-list": false },
  },
  time: { flags: "apqv", values: "fo", long: { format: true, output: true, append: false } },
  timeout: {
    flags: "fpv",
    values: "ks",
    long: {
      "kill-after": true,
      signal: true,
      "preserve-status": false,
      foreground: false,
      verbose: false,
    },
  },
  unshare: {
    flags: "muinpUCTfrc",
    values: "RwSGl",
    long: {
      ..._optional([..._NAMESPACES, "kill-child", "mount-proc", "mount-binfmt"]),
      fork: false,
      "map-user": true,
      "map-group": true,
      "map-root-user": false,
      "map-current-user": false,
      "map-auto": false,
      "map-users": true,
      "map-groups": true,
      propagation: true,
      setgroups: true,
      "keep-caps": false,
      root: true,
      wd: true,
      setuid: true,
      setgid: true,
      monotonic: true,
      boottime: true,
      "load-interp": true,
    },
  },
  valgrind: { flags: "qvhd", single: true },
  watch: {
    flags: "bcCegprtwx",
    values: "nq",
    attached: "d",
    long: {
      interval: true,
      exec: false,
      differences: "optional",
      "no-title": false,
      beep: false,
      color: false,
      "no-color": false,
      errexit: false,
      chgexit: false,
      precise: false,
      "no-wrap": false,
      "no-rerun": false,
      equexit: true,
    },
  },
  xargs: {
    flags: "0oprtx",
    values: "adEILnPs",
    attached: "eil",
    long: {
      null: false,
      "arg-file": true,
      delimiter: true,
      eof: "optional",
      replace: "optional",
      "max-args": true,
      "max-lines": "optional",
      "max-procs": true,
      "max-chars": true,
      "process-slot-var": true,
      interactive: false,
      "open-tty": false,
      "no-run-if-empty": false,
      "show-limits": false,
      exit: false,
      verbose: false,
    },
  },
};
