/**
 * The saved sessions, seen and kept in bounds from the command line:
 *
 * - `agent --sessions [--page N] [--limit N]` and `agent sessions [list] [--page N] [--limit N]`:
 *   a page of this directory's sessions, newest first, and how to see the next.
 * - `agent sessions prune [--older-than 30d] [--keep N] [--dry-run]`: removes the sessions of
 *   every project older than the age given and past the newest N of their project (each rule
 *   when given), never one another process is writing; says what it removed and the bytes freed.
 *
 * @module
 */

import { dirname, resolve } from "node:path";
import { ConfigError } from "../errors.ts";
import { checkPrivateDir } from "../files/private_files.ts";
import {
  defaultSessionsDir,
  fileSessionStore,
  type PruneResult,
  pruneSessions,
  type SessionInfo,
  type SessionStore,
} from "../session/mod.ts";
import { UsageError } from "./args.ts";
import { againWith, thisInvocation } from "./invocation.ts";
import { parsePruneArgs, PRUNE_OPTIONS, refuseOutside, wholeNumber } from "./prune_options.ts";

/** Sessions a page of `--sessions` shows when `--limit` is not given. */
export const SESSIONS_PAGE = 20;

/** What `agent sessions …` asks for. */
export interface SessionsCommand {
  /** What to do. */
  action: "list" | "prune";
  /** The project's directory, for `list` (default the working directory). */
  cwd?: string;
  /** `list`: the page (from 1). */
  page: number;
  /** `list`: sessions a page. */
  limit: number;
  /** `prune`: remove sessions last updated longer ago than this (ms). */
  olderThan?: number;
  /** `prune`: keep the newest this many of each project. */
  keep?: number;
  /** `prune`: say what would be removed, remove nothing. */
  dryRun: boolean;
  /** Show the command's help. */
  help: boolean;
}

/** The command's help. */
export const SESSIONS_HELP = `agent sessions: the saved sessions

  agent sessions [list]       this directory's sessions, newest first, a page at a time
      --page <n>              the page (default 1)
      --limit <n>             sessions a page (default ${SESSIONS_PAGE})
      --cwd <dir>             the project (default: the working directory)
  agent sessions prune        remove the sessions of every project that the rules pick
      --older-than <age>      last updated longer ago than this (30d, 12w, 36h, 90m)
      --keep <n>              but keep the newest n of each project
      --dry-run               say what would be removed, remove nothing

A session another process is writing is never removed. agent --sessions [--page n] [--limit n]
lists as agent sessions does.
`;

const _UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * An age as `--older-than` takes it (`30d`, `12w`, `36h`, `90m`), in ms; a `UsageError` otherwise.
 *
 * @example
 * ```ts
 * import { parseAge } from "./sessions_command.ts";
 * if (parseAge("2d") !== 2 * 86_400_000) throw new Error("unexpected");
 * ```
 */
export function parseAge(text: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([mhdw])$/.exec(text.trim());
  if (!match) {
    throw new UsageError(
      `--older-than takes an age: a number and m, h, d or w (as in 30d), not "${text}"`,
    );
  }
  return Number(match[1]) * _UNITS[match[2]];
}

/**
 * Parses the arguments after `agent sessions`. Throws a `UsageError` that says what is wrong.
 *
 * @example
 * ```ts
 * import { parseSessionsArgs } from "./sessions_command.ts";
 * const command = parseSessionsArgs(["prune", "--keep", "10", "--dry-run"]);
 * if (command.action !== "prune" || command.keep !== 10 || !command.dryRun) throw new Error();
 * ```
 */
export function parseSessionsArgs(args: readonly string[]): SessionsCommand {
  const { values, positionals } = parsePruneArgs(args, {
    options: ["page", "limit", "cwd"],
    refusal: (message) => `${message.replace(/\.$/, "")} (see agent sessions --help)`,
  });
  const action = positionals[0] ?? "list";
  if ((action !== "list" && action !== "prune") || positionals.length > 1) {
    throw new UsageError(
      `agent sessions takes list or prune, not "${
        positionals.join(" ")
      }" (see agent sessions --help)`,
    );
  }
  const given = { command: "agent sessions", action };
  refuseOutside(values, { ...given, of: "prune", options: PRUNE_OPTIONS });
  refuseOutside(values, { ...given, of: "list", options: ["page", "limit", "cwd"] });
  const command: SessionsCommand = {
    action,
    cwd: values.cwd,
    page: pageNumber(values.page, "--page", 1_000_000) ?? 1,
    limit: pageNumber(values.limit, "--limit", 1000) ?? SESSIONS_PAGE,
    dryRun: values["dry-run"] ?? false,
    help: values.help ?? false,
  };
  if (values["older-than"] !== undefined) command.olderThan = parseAge(values["older-than"]);
  if (values.keep !== undefined) {
    const refusal = `--keep takes a whole number ≥ 0, not "${values.keep}"`;
    command.keep = wholeNumber(values.keep, 0, Number.MAX_SAFE_INTEGER, refusal);
  }
  if (
    action === "prune" && !command.help && command.olderThan === undefined &&
    command.keep === undefined
  ) {
    throw new UsageError(
      "agent sessions prune needs --older-than <age>, --keep <n>, or both (see agent sessions --help)",
    );
  }
  return command;
}

/**
 * A whole number from 1 to `max` given to `flag`, or `undefined` when not given; a `UsageError`
 * otherwise.
 *
 * @example
 * ```ts
 * import { pageNumber } from "./sessions_command.ts";
 * if (pageNumber("3", "--page", 10) !== 3 || pageNumber(undefined, "--page", 10) !== undefined) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function pageNumber(
  text: string | undefined,
  flag: string,
  max: number,
): number | undefined {
  if (text === undefined) return undefined;
  return wholeNumber(text, 1, max, `${flag} takes a whole number from 1 to ${max}, not "${text}"`);
}

/** Where the listing is printed. */
export interface SessionsIo {
  /** Writes to stdout. */
  out(text: string): void;
  /** Writes to stderr. */
  err(text: string): void;
  /** Reads an environment variable. */
  env(name: string): string | undefined;
}

/**
 * Prints a page of `cwd`'s sessions, newest first, and how to see the next page. `again` is
 * how to run the same listing with other flags (e.g. `agent --sessions`).
 *
 * @example
 * ```ts
 * import { printSessionsPage } from "./sessions_command.ts";
 * import { memorySessionStore } from "../session/mod.ts";
 * const store = memorySessionStore();
 * for (let i = 0; i < 3; i++) await (await store.create({ cwd: "/w", model: "a/b" })).close();
 * let out = "";
 * await printSessionsPage(store, "/w", { page: 1, limit: 2 }, "agent --sessions", (t) => out += t);
 * if (!out.includes("Sessions 1-2 of 3") || !out.includes("agent --sessions --page 2")) {
 *   throw new Error(out);
 * }
 * ```
 */
export async function printSessionsPage(
  store: SessionStore,
  cwd: string,
  which: { page: number; limit: number },
  again: string,
  out: (text: string) => void,
): Promise<void> {
  const offset = (which.page - 1) * which.limit;
  const { sessions, total } = await store.list(cwd, { limit: which.limit, offset });
  if (total === 0) {
    out(`No saved sessions in ${cwd}.\n`);
    return;
  }
  for (const info of sessions) out(_line(info));
  if (sessions.length === 0) {
    const last = Math.ceil(total / which.limit);
    out(
      `No page ${which.page}: ${total} session${total === 1 ? "" : "s"} make ${last} page` +
        `${last === 1 ? "" : "s"} of ${which.limit}.\n`,
    );
    return;
  }
  const to = offset + sessions.length;
  // All of them on one page: the list says it all.
  if (offset === 0 && to === total) return;
  const more = to < total
    ? ` Next: ${again} --page ${which.page + 1}` +
      (which.limit === SESSIONS_PAGE ? "" : ` --limit ${which.limit}`)
    : "";
  out(`Sessions ${offset + 1}-${to} of ${total} in ${cwd}, newest first.${more}\n`);
}

/**
 * `agent --sessions`: a page of the run's directory's sessions.
 *
 * @example
 * ```ts
 * import { listSessions } from "./sessions_command.ts";
 * let err = "";
 * const io = { out: () => {}, err: (text: string) => err += text, env: () => undefined };
 * if (await listSessions(undefined, "/w", {}, undefined, io) !== 1) throw new Error(err);
 * ```
 */
export async function listSessions(
  store: SessionStore | undefined,
  cwd: string,
  which: { page?: number; limit?: number },
  command: string | undefined,
  io: SessionsIo,
): Promise<number> {
  if (!store) {
    io.err("agent: sessions are not available in this run\n");
    return 1;
  }
  const page = { page: which.page ?? 1, limit: which.limit ?? SESSIONS_PAGE };
  await printSessionsPage(store, cwd, page, againWith(command, "--sessions"), io.out);
  return 0;
}

/**
 * Runs `agent sessions …` with the arguments after `sessions`; resolves to the exit code.
 *
 * @example
 * ```ts
 * import { runSessionsCommand } from "./sessions_command.ts";
 * let out = "";
 * const io = { out: (text: string) => out += text, err: () => {}, env: () => undefined };
 * if (await runSessionsCommand(["--help"], io) !== 0 || !out.includes("prune")) throw new Error();
 * ```
 */
export async function runSessionsCommand(
  args: readonly string[],
  io: SessionsIo,
): Promise<number> {
  const command = parseSessionsArgs(args);
  if (command.help) {
    io.out(SESSIONS_HELP);
    return 0;
  }
  const dir = defaultSessionsDir(io.env);
  if (!dir) throw new ConfigError("No data directory for sessions: set HOME or AGENT_DATA_DIR");
  const refused = checkPrivateDir(dirname(dir));
  if (refused) {
    throw new ConfigError(`The data directory ${dirname(dir)} is not used: ${refused}`);
  }
  if (command.action === "list") {
    const cwd = resolve(command.cwd ?? Deno.cwd());
    const again = againWith(thisInvocation(Deno.cwd()), "sessions");
    await printSessionsPage(fileSessionStore({ dir }), cwd, command, again, io.out);
    return 0;
  }
  const result = await pruneSessions(dir, {
    olderThan: command.olderThan,
    keep: command.keep,
    dryRun: command.dryRun,
  });
  io.out(pruneReport(result, command.dryRun));
  return 0;
}

/**
 * What a prune did, in words: each session removed, then the count and the bytes freed, and the
 * sessions left because another process writes them or because they cannot be removed.
 *
 * @example
 * ```ts
 * import { pruneReport } from "./sessions_command.ts";
 * const session = { id: "3f9a2c7e-1b", cwd: "/w", updated: "2025-01-01T00:00:00Z", bytes: 2048 };
 * const text = pruneReport({ removed: [session], busy: [], kept: [], bytes: 2048 }, false);
 * if (!text.includes("Removed 1 session (2.0 KB freed)")) throw new Error(text);
 * ```
 */
export function pruneReport(result: PruneResult, dryRun: boolean): string {
  const lines = result.removed.map((session) =>
    `${dryRun ? "would remove" : "removed"}  ${session.id}  ` +
    `${session.updated.slice(0, 16).replace("T", " ")}  ${_bytes(session.bytes)}  ${session.cwd}`
  );
  const count = result.removed.length;
  const sessions = `${count} session${count === 1 ? "" : "s"}`;
  lines.push(
    dryRun
      ? `Would remove ${sessions} (${_bytes(result.bytes)} freed); nothing was removed (--dry-run).`
      : `Removed ${sessions} (${_bytes(result.bytes)} freed).`,
  );
  for (const session of result.busy) {
    lines.push(`kept ${session.id}: another process is writing it`);
  }
  for (const session of result.kept) {
    lines.push(`kept ${session.id}: cannot remove: ${session.reason}`);
  }
  return lines.join("\n") + "\n";
}

function _line(info: SessionInfo): string {
  return `${info.id}  ${info.updated.slice(0, 16).replace("T", " ")}  ${info.messages} message` +
    `${info.messages === 1 ? "" : "s"}  ${info.model}  ${info.title}\n`;
}

function _bytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
