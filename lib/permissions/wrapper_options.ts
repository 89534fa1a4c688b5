/**
 * The parser that reads the options of a command that runs other commands the way the command
 * itself does (each one's syntax is in `wrapper_specs.ts`): options that take a value take it
 * (attached or as the next word), and an option the wrapper is not known to take makes the
 * words unreadable rather than guessed.
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
 * import { parseOptions } from "./wrapper_options.ts";
 * import { WRAPPER_OPTIONS } from "./wrapper_specs.ts";
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
