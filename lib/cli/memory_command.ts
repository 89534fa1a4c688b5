/**
 * `agent memory`: the project's long-term memory seen and kept in bounds by hand.
 *
 * - `agent memory` / `agent memory stats`: where it is, its size on disk, its run loops and
 *   segments, the oldest and newest, the bytes per run loop, the retention policy in effect.
 * - `agent memory prune [--older-than 90d] [--keep N] [--dry-run]`: drops the run loops archived
 *   before the age given, or all but the newest N (the settings' policy when neither is given);
 *   with `--dry-run`, counts them and drops nothing.
 * - `agent memory vacuum`: gives the space freed back to the file system.
 *
 * `--cwd <dir>` picks the project, `--output json` prints one JSON object. A project without a
 * memory yet is said so; nothing is created.
 *
 * @module
 */

import { dirname, resolve } from "node:path";
import { ConfigError } from "../errors.ts";
import { checkPrivateDir } from "../files/private_files.ts";
import { type MemoryStats, openMemory, type RetentionPolicy } from "../memory/mod.ts";
import { defaultSessionsDir } from "../session/mod.ts";
import { UsageError } from "./args.ts";
import { memoryPath, retentionPolicy } from "./memory.ts";
import { parsePruneArgs, PRUNE_OPTIONS, refuseOutside, wholeNumber } from "./prune_options.ts";
import { loadSettings } from "./settings.ts";

/** What `agent memory …` asks for. */
export interface MemoryCommand {
  /** What to do. */
  action: "stats" | "prune" | "vacuum";
  /** The project's directory (default the working directory). */
  cwd?: string;
  /** How to print. */
  output: "text" | "json";
  /** `prune`: drop run loops archived more than this many days ago. */
  olderThanDays?: number;
  /** `prune`: keep only the newest this many. */
  keep?: number;
  /** `prune`: count, drop nothing. */
  dryRun: boolean;
  /** Show the command's help. */
  help: boolean;
}

const _ACTIONS = ["stats", "prune", "vacuum"] as const;

const _UNITS: Record<string, number> = { h: 1 / 24, d: 1, w: 7 };

/** The command's help. */
export const MEMORY_HELP = `agent memory: the project's long-term memory

  agent memory [stats]        where it is, its size, run loops, oldest and newest
  agent memory prune          drop what the retention policy does not keep
      --older-than <age>      drop run loops archived longer ago (90d, 12w, 36h)
      --keep <n>              keep only the newest n run loops
      --dry-run               count what would be dropped, drop nothing
  agent memory vacuum         give the space freed back to the file system

  --cwd <dir>                 the project (default: the working directory)
  --output text|json          how to print

The retention policy is "memory.retention" in the user settings: { "maxAgeDays": 180,
"maxRunLoops": 10000, "maxBytes": 268435456, "detailDays": 30 } by default, applied after each
run (run loops older than detailDays keep their goal, messages and answers, without reasoning,
tool calls and results); a bound set to null is lifted, and false keeps everything.
`;

/**
 * Parses the arguments after `agent memory`. Throws a `UsageError` that says what is wrong.
 *
 * @example
 * ```ts
 * import { parseMemoryArgs } from "./memory_command.ts";
 * const command = parseMemoryArgs(["prune", "--older-than", "90d", "--dry-run"]);
 * if (command.action !== "prune" || command.olderThanDays !== 90 || !command.dryRun) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function parseMemoryArgs(args: readonly string[]): MemoryCommand {
  const { values, positionals } = parsePruneArgs(args, {
    options: ["cwd", "output"],
    refusal: (message) =>
      `${message.replace(/\. To specify a positional.*$/s, "")} for agent memory ` +
      "(see agent memory --help)",
  });
  const [action = "stats", ...rest] = positionals;
  if (!_ACTIONS.includes(action as MemoryCommand["action"])) {
    throw new UsageError(
      `agent memory has no command "${action}": use stats, prune or vacuum (see agent memory ` +
        `--help); to run a task that starts with "memory", quote it: agent "memory ${action} …"`,
    );
  }
  if (rest.length > 0) {
    throw new UsageError(`agent memory ${action} takes no argument "${rest.join(" ")}"`);
  }
  const output = values.output ?? "text";
  if (output !== "text" && output !== "json") {
    throw new UsageError(`--output must be text or json, got "${output}"`);
  }
  refuseOutside(values, { command: "agent memory", action, of: "prune", options: PRUNE_OPTIONS });
  let olderThanDays: number | undefined;
  if (values["older-than"] !== undefined) {
    const match = /^(\d+(?:\.\d+)?)([hdw])$/.exec(values["older-than"].trim());
    olderThanDays = match ? Number(match[1]) * _UNITS[match[2]] : NaN;
    if (!(olderThanDays > 0)) {
      throw new UsageError(
        `--older-than needs an age like 90d, 12w or 36h, got "${values["older-than"]}"`,
      );
    }
  }
  const keep = values.keep === undefined ? undefined : wholeNumber(
    values.keep,
    1,
    Number.MAX_SAFE_INTEGER,
    `--keep needs the number of run loops to keep, 1 or more, got "${values.keep}"`,
  );
  return {
    action: action as MemoryCommand["action"],
    cwd: values.cwd,
    output,
    olderThanDays,
    keep,
    dryRun: values["dry-run"] ?? false,
    help: values.help ?? false,
  };
}

/** Where `agent memory` writes. */
export interface MemoryCommandIo {
  /** Writes to stdout. */
  out(text: string): void;
  /** Writes to stderr. */
  err(text: string): void;
  /** Reads an environment variable. */
  env(name: string): string | undefined;
}

/**
 * Runs `agent memory …` with the arguments after `memory`; resolves to the exit code. Throws a
 * `UsageError` for bad arguments and a `ConfigError` when there is no data directory to use.
 */
export async function runMemoryCommand(
  args: readonly string[],
  io: MemoryCommandIo,
): Promise<number> {
  const command = parseMemoryArgs(args);
  if (command.help) {
    io.out(MEMORY_HELP);
    return 0;
  }
  const cwd = resolve(command.cwd ?? Deno.cwd());
  const sessionsDir = defaultSessionsDir(io.env);
  if (!sessionsDir) throw new ConfigError("No data directory: set HOME or AGENT_DATA_DIR");
  const dataDir = dirname(sessionsDir);
  const refused = checkPrivateDir(dataDir);
  if (refused) {
    throw new ConfigError(
      `the data directory ${dataDir} is not used: ${refused}; set AGENT_DATA_DIR to a ` +
        "directory of your own",
    );
  }
  // Retention is the user's to set: the project's settings have no say in it.
  const loaded = await loadSettings({ cwd, env: io.env, project: null });
  for (const warning of loaded.warnings) io.err(`agent: ${warning}\n`);
  const policy = retentionPolicy(loaded.settings);
  const path = memoryPath(dataDir, cwd);
  const print = (text: string, json: Record<string, unknown>) =>
    io.out(command.output === "json" ? `${JSON.stringify({ path, ...json })}\n` : text);
  if (!_exists(path)) {
    print(`No memory for ${cwd} yet (it would be ${path}).\n`, { exists: false });
    return 0;
  }
  const memory = await openMemory({ path });
  try {
    if (command.action === "stats") {
      const stats = memory.stats();
      const disk = _diskBytes(path);
      print(_statsText(cwd, path, stats, disk, policy), {
        exists: true,
        diskBytes: disk,
        ...stats,
        bytesPerRunLoop: stats.runLoops ? Math.round(stats.bytes / stats.runLoops) : 0,
        retention: policy ?? false,
      });
    } else if (command.action === "prune") {
      const given = command.olderThanDays !== undefined || command.keep !== undefined;
      const applied: RetentionPolicy = given
        ? { maxAgeDays: command.olderThanDays, maxRunLoops: command.keep }
        : policy ?? {};
      const result = await memory.prune({ ...applied, dryRun: command.dryRun });
      const left = memory.stats();
      const outlined = result.outlined
        ? ` and the detail of ${_count(result.outlined, "more run loop")}`
        : "";
      const what = `${_count(result.runLoops, "run loop")}${outlined} ` +
        `(${_count(result.segments, "segment")})`;
      const none = result.runLoops === 0 && !result.outlined;
      // What is kept: after a dry run, what would be.
      const kept = command.dryRun ? left.runLoops - result.runLoops : left.runLoops;
      print(
        command.dryRun
          ? `Would drop ${what} of ${left.runLoops.toLocaleString("en")}; nothing was dropped.\n`
          : none
          ? `Nothing to drop: ${_count(kept, "run loop")} kept.\n`
          : `Dropped ${what}; ${_count(kept, "run loop")} kept. ` +
            `agent memory vacuum gives the space back.\n`,
        { ...result, kept, policy: applied },
      );
    } else {
      const { bytesBefore, bytesAfter } = await memory.vacuum();
      print(
        `Vacuumed ${path}: the database file ${_size(bytesBefore)} → ${_size(bytesAfter)}.\n`,
        { bytesBefore, bytesAfter },
      );
    }
  } finally {
    await memory.close();
  }
  return 0;
}

function _statsText(
  cwd: string,
  path: string,
  stats: MemoryStats,
  disk: number,
  policy: RetentionPolicy | undefined,
): string {
  const n = (value: number) => value.toLocaleString("en");
  const span = stats.oldest ? ` (oldest ${_day(stats.oldest)}, newest ${_day(stats.newest!)})` : "";
  const perLoop = stats.runLoops ? _size(stats.bytes / stats.runLoops) : "-";
  return [
    `memory of ${cwd}: ${path}`,
    `  size on disk   ${_size(disk)} (${_size(stats.freeBytes)} free inside)`,
    `  run loops      ${n(stats.runLoops)}${span}`,
    `  segments       ${n(stats.segments)}`,
    `  vectors        ${n(stats.vectors)}`,
    `  per run loop   ${perLoop}`,
    `  retention      ${_policyText(policy)}`,
    "",
  ].join("\n");
}

function _policyText(policy: RetentionPolicy | undefined): string {
  const bounds = [
    policy?.maxAgeDays !== undefined && `the last ${policy.maxAgeDays} days`,
    policy?.maxRunLoops !== undefined && `the newest ${policy.maxRunLoops.toLocaleString("en")}`,
    policy?.maxBytes !== undefined && `at most ${_size(policy.maxBytes)}`,
  ].filter(Boolean);
  const detail = policy?.detailDays !== undefined
    ? `; their detail for ${policy.detailDays} days`
    : "";
  return bounds.length || detail
    ? `run loops of ${bounds.join(", ") || "any age"}${detail}`
    : "everything is kept";
}

function _exists(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

function _diskBytes(path: string): number {
  let bytes = 0;
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      bytes += Deno.statSync(file).size;
    } catch {
      // Not there.
    }
  }
  return bytes;
}

function _count(n: number, noun: string): string {
  return `${n.toLocaleString("en")} ${noun}${n === 1 ? "" : "s"}`;
}

function _day(iso: string): string {
  return iso.slice(0, 16).replace("T", " ");
}

function _size(bytes: number): string {
  if (bytes < 1024) return `${Math.round(bytes)} B`;
  const units = ["KiB", "MiB", "GiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}
