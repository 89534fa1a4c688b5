/**
 * The arguments of the commands that keep what the agent saves in bounds (`agent memory`,
 * `agent sessions`): each has actions (`stats`, `list`, `prune`, …) and options of its own, and
 * a `prune` that takes `--older-than <age>`, `--keep <n>` and `--dry-run`. Parsed here in one
 * way: an unknown option is refused as the command phrases it, and an option of one action
 * given to another is refused by name (`--keep is an option of agent memory prune`).
 *
 * What an age or a count means stays with each command (days or ms, at least 0 or 1).
 *
 * @module
 */

import { parseArgs } from "node:util";
import { UsageError } from "./args.ts";

/** The options `prune` takes, as given on the command line. */
export const PRUNE_OPTIONS: readonly ["older-than", "keep", "dry-run"] = [
  "older-than",
  "keep",
  "dry-run",
];

/** How {@link parsePruneArgs} reads a command's arguments. */
export interface PruneArgsSpec<Own extends string> {
  /** The command's own options, each taking a value, beside those of `prune` and `--help`. */
  options: readonly Own[];
  /**
   * The message of the `UsageError` for arguments `node:util`'s `parseArgs` refuses, made from
   * its message (e.g. `Unknown option '-m'. To specify a positional …`).
   */
  refusal(message: string): string;
}

/** A command's arguments, parsed by {@link parsePruneArgs}. */
export interface PruneArgs<Own extends string> {
  /** The arguments that are not options: the action first, when given. */
  positionals: string[];
  /** The options given: the command's own and `prune`'s as text, `--dry-run` and `--help`. */
  values:
    & { [name in Own | "older-than" | "keep"]?: string }
    & { "dry-run"?: boolean; help?: boolean };
}

/**
 * Parses `args` strictly: the command's own options, `--older-than <age>`, `--keep <n>`,
 * `--dry-run` and `--help` (`-h`), and any positionals. Throws a `UsageError` with the message
 * `spec.refusal` makes of what `parseArgs` refused.
 *
 * @example
 * ```ts
 * import { parsePruneArgs } from "./prune_options.ts";
 * const spec = {
 *   options: ["cwd"] as const,
 *   refusal: (message: string) => `${message} (see agent memory --help)`,
 * };
 * const { positionals, values } = parsePruneArgs(["prune", "--keep", "5", "--dry-run"], spec);
 * if (positionals[0] !== "prune" || values.keep !== "5" || !values["dry-run"]) {
 *   throw new Error("unexpected");
 * }
 * let refused = "";
 * try {
 *   parsePruneArgs(["--model", "a/b"], spec);
 * } catch (error) {
 *   refused = (error as Error).message;
 * }
 * if (!/^Unknown option '--model'.*\(see agent memory --help\)$/.test(refused)) {
 *   throw new Error(refused);
 * }
 * ```
 */
export function parsePruneArgs<Own extends string>(
  args: readonly string[],
  spec: PruneArgsSpec<Own>,
): PruneArgs<Own> {
  const own = Object.fromEntries(spec.options.map((name) => [name, { type: "string" }] as const));
  try {
    const { values, positionals } = parseArgs({
      args: [...args],
      allowPositionals: true,
      strict: true,
      options: {
        ...own,
        "older-than": { type: "string" },
        keep: { type: "string" },
        "dry-run": { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
    return { positionals, values: values as PruneArgs<Own>["values"] };
  } catch (error) {
    throw new UsageError(spec.refusal((error as Error).message));
  }
}

/** Where options belong, for {@link refuseOutside}. */
export interface OptionsOfAction {
  /** The command, as the user types it (`agent sessions`). */
  command: string;
  /** The action given. */
  action: string;
  /** The action the options belong to. */
  of: string;
  /** The options, without their `--`. */
  options: readonly string[];
}

/**
 * Throws a `UsageError` naming the first of `where.options` given in `values` when the action
 * given is not the one they belong to: `--keep is an option of agent sessions prune`.
 *
 * @example
 * ```ts
 * import { PRUNE_OPTIONS, refuseOutside } from "./prune_options.ts";
 * const where = { command: "agent sessions", of: "prune", options: PRUNE_OPTIONS };
 * refuseOutside({ keep: "3" }, { ...where, action: "prune" }); // its own action: taken
 * try {
 *   refuseOutside({ keep: "3" }, { ...where, action: "list" });
 *   throw new Error("not refused");
 * } catch (error) {
 *   if ((error as Error).message !== "--keep is an option of agent sessions prune") throw error;
 * }
 * ```
 */
export function refuseOutside(
  values: Readonly<Record<string, string | boolean | undefined>>,
  where: OptionsOfAction,
): void {
  if (where.action === where.of) return;
  const given = where.options.find((name) => values[name] !== undefined);
  if (given) throw new UsageError(`--${given} is an option of ${where.command} ${where.of}`);
}

/**
 * The whole number `text` says, written in decimal digits only (spaces around them aside), from
 * `min` to `max`; else throws a `UsageError` with `refusal`. An empty value (`--keep=`, as
 * `--keep=$N` gives when N is unset) is refused, never read as 0; so are `0x10`, `1e3`, `1.0`.
 *
 * @example
 * ```ts
 * import { wholeNumber } from "./prune_options.ts";
 * if (wholeNumber(" 12", 0, 100, "bad") !== 12) throw new Error("unexpected");
 * for (const text of ["", " ", "0x10", "1e3", "1.0", "-1", "101"]) {
 *   try {
 *     wholeNumber(text, 0, 100, `bad ${text}`);
 *     throw new Error(`taken: ${text}`);
 *   } catch (error) {
 *     if ((error as Error).message !== `bad ${text}`) throw error;
 *   }
 * }
 * ```
 */
export function wholeNumber(text: string, min: number, max: number, refusal: string): number {
  const digits = text.trim();
  const value = /^\d{1,16}$/.test(digits) ? Number(digits) : NaN;
  if (!(Number.isSafeInteger(value) && value >= min && value <= max)) {
    throw new UsageError(refusal);
  }
  return value;
}
