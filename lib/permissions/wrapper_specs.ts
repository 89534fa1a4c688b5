/**
 * The option syntax of the commands that run other commands, from their manual pages (GNU
 * coreutils, util-linux, sudo, procps, systemd), for `parseOptions`: which options take a value,
 * which run nothing, which start a shell.
 *
 * @module
 */

import type { OptionSpec } from "./wrapper_options.ts";

/** Long options: those without a value, those with one, and those whose value needs `=`. */
function longOptions(
  names: { flags?: string; values?: string; optional?: string },
): Record<string, boolean | "optional"> {
  const kinds = { flags: false, values: true, optional: "optional" } as const;
  return Object.fromEntries(
    (Object.keys(kinds) as (keyof typeof kinds)[]).flatMap((key) =>
      (names[key] ?? "").split(" ").filter(Boolean).map((name) => [name, kinds[key]])
    ),
  );
}

/** The shells' options: `-c` runs its first word, `-s` (or no script) reads standard input. */
export const SHELL_OPTIONS: OptionSpec = {
  flags: "abcefhiklmnprstuvxBCEHPT",
  values: "oO",
  long: longOptions({
    flags: "login norc noprofile posix restricted verbose debugger dump-strings noediting " +
      "pretty-print",
    values: "rcfile init-file",
  }),
  plus: true,
  dash: "end",
};

/** `su` and `runuser`: options anywhere (`su root -c cmd`), `-c` a command line. */
const _SU: OptionSpec = {
  flags: "flmpPhV",
  values: "cgGswu",
  long: longOptions({
    flags: "fast login preserve-environment pty",
    values: "command session-command group supp-group shell whitelist-environment user",
  }),
  script: ["c", "command", "session-command"],
  dash: "skip",
  permute: true,
};

/** Each wrapper's options, by command name. */
export const WRAPPER_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  builtin: {},
  chronic: { flags: "ev" },
  chroot: { long: longOptions({ flags: "skip-chdir", values: "groups userspec" }) },
  chrt: {
    flags: "abdfimoprRv",
    values: "TPD",
    long: longOptions({
      flags: "all-tasks batch deadline fifo idle other rr reset-on-fork max pid verbose",
      values: "sched-runtime sched-period sched-deadline",
    }),
    none: ["m", "p", "max", "pid"],
  },
  command: { flags: "pvV", none: ["v", "V"] },
  coproc: {},
  doas: { flags: "Lns", values: "aCu", none: ["C", "L"], shell: ["s"] },
  eatmydata: {},
  env: {
    flags: "i0v",
    values: "uCSa",
    long: longOptions({
      flags: "ignore-environment null debug list-signal-handling",
      values: "unset chdir split-string argv0",
      optional: "block-signal default-signal ignore-signal",
    }),
    split: ["S", "split-string"],
    dash: "skip",
  },
  exec: { flags: "cl", values: "a" },
  fakeroot: {
    flags: "uhv",
    values: "lisb",
    long: longOptions({ flags: "unknown-is-real", values: "lib faked fd-base" }),
  },
  firejail: { single: true },
  flock: {
    flags: "sexnoFuhV",
    values: "wE",
    long: longOptions({
      flags: "shared exclusive unlock nonblock close no-fork verbose",
      values: "timeout conflict-exit-code",
    }),
  },
  ionice: {
    flags: "t",
    values: "cnpPu",
    long: longOptions({ flags: "ignore", values: "class classdata pid pgid uid" }),
    none: ["p", "P", "u", "pid", "pgid", "uid"],
  },
  ltrace: { flags: "bcCfhiLrStTV", values: "aAeFlnopsuwxD", none: ["p"] },
  nice: { values: "n", long: longOptions({ values: "adjustment" }), numeric: true },
  nohup: {},
  nsenter: {
    flags: "aFZ",
    values: "tSGW",
    attached: "muinpCUTrw",
    long: longOptions({
      flags: "all preserve-credentials no-fork follow-context",
      values: "target setuid setgid wdns",
      optional: "mount uts ipc net pid user cgroup time root wd",
    }),
  },
  numactl: {
    flags: "alsHb",
    values: "ipCNmP",
    long: longOptions({
      flags: "all localalloc show hardware balancing",
      values: "interleave preferred preferred-many physcpubind cpunodebind membind",
    }),
    none: ["s", "H", "show", "hardware"],
  },
  pkexec: { long: longOptions({ flags: "disable-internal-agent keep-cwd", values: "user" }) },
  prlimit: {
    values: "po",
    attached: "cdefilmnqrstuvxy",
    long: longOptions({
      flags: "noheadings raw verbose",
      values: "pid output",
      optional: "core data nice fsize sigpending memlock rss nofile msgqueue rtprio stack cpu " +
        "nproc as locks rttime",
    }),
    none: ["p", "pid"],
  },
  runuser: _SU,
  script: {
    flags: "aefqhV",
    values: "IOBTmEoc",
    attached: "t",
    long: longOptions({
      flags: "append return flush force quiet",
      values: "log-in log-out log-io log-timing logging-format command echo output-limit",
      optional: "timing",
    }),
    script: ["c", "command"],
    permute: true,
  },
  setpriv: {
    flags: "d",
    long: longOptions({
      flags: "dump nnp no-new-privs clear-groups keep-groups init-groups reset-env",
      values: "ambient-caps inh-caps bounding-set ruid euid rgid egid reuid regid groups " +
        "securebits pdeathsig selinux-label apparmor-profile landlock-access " +
        "landlock-rule",
    }),
    none: ["d", "dump"],
  },
  setsid: { flags: "cfw", long: longOptions({ flags: "ctty fork wait" }) },
  stdbuf: { values: "ioe", long: longOptions({ values: "input output error" }) },
  strace: { flags: "cCdDfFhikqrtTvVwxyYzZ", values: "abeEIoOpPsSuUX", none: ["p"] },
  su: _SU,
  sudo: {
    flags: "ABbEHiKklNnPSsVv",
    values: "aCcDgpRrTtUu",
    attached: "h",
    long: longOptions({
      flags: "askpass bell background edit set-home login remove-timestamp reset-timestamp " +
        "list no-update non-interactive preserve-groups stdin shell validate",
      values: "close-from chdir chroot group host prompt role type command-timeout other-user " +
        "user",
      optional: "preserve-env",
    }),
    none: ["e", "K", "k", "l", "V", "v", "edit", "list", "validate"],
    shell: ["i", "s", "login", "shell"],
  },
  "systemd-run": {
    flags: "hrdtPqGS",
    values: "HMupE",
    long: longOptions({
      flags: "no-ask-password user system scope slice-inherit no-block remain-after-exit " +
        "wait send-sighup same-dir pty pipe quiet collect shell on-timezone-change " +
        "on-clock-change",
      values: "host machine unit property description slice service-type uid gid nice " +
        "working-directory setenv path-property socket-property timer-property " +
        "on-active on-boot on-startup on-unit-active on-unit-inactive on-calendar",
    }),
    shell: ["S", "shell"],
  },
  taskset: {
    flags: "acp",
    long: longOptions({ flags: "all-tasks pid cpu-list" }),
    none: ["p", "pid"],
  },
  time: {
    flags: "apqv",
    values: "fo",
    long: longOptions({ flags: "append", values: "format output" }),
  },
  timeout: {
    flags: "fpv",
    values: "ks",
    long: longOptions({ flags: "preserve-status foreground verbose", values: "kill-after signal" }),
  },
  unshare: {
    flags: "muinpUCTfrc",
    values: "RwSGl",
    long: longOptions({
      flags: "fork map-root-user map-current-user map-auto keep-caps",
      values: "map-user map-group map-users map-groups propagation setgroups root wd setuid " +
        "setgid monotonic boottime load-interp",
      optional: "mount uts ipc net pid user cgroup time kill-child mount-proc mount-binfmt",
    }),
  },
  valgrind: { flags: "qvhd", single: true },
  watch: {
    flags: "bcCegprtwx",
    values: "nq",
    attached: "d",
    long: longOptions({
      flags: "exec no-title beep color no-color errexit chgexit precise no-wrap no-rerun",
      values: "interval equexit",
      optional: "differences",
    }),
  },
  xargs: {
    flags: "0oprtx",
    values: "adEILnPs",
    attached: "eil",
    long: longOptions({
      flags: "null interactive open-tty no-run-if-empty show-limits exit verbose",
      values: "arg-file delimiter max-args max-procs max-chars process-slot-var",
      optional: "eof replace max-lines",
    }),
  },
};
