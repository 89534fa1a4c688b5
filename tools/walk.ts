/**
 * The file walker behind `glob` and `grep`: every file below a directory, in a stable order,
 * without `.git`, without what `.gitignore` files exclude, without what the permission rules
 * refuse to read, and without following directory symlinks.
 *
 * The `.gitignore` files of the enclosing repository's directories above the root apply too,
 * as does `.git/info/exclude`, so a walk of `src/` skips what the repository's top-level
 * `.gitignore` excludes. Nested `.gitignore` files apply below their directory with git's
 * precedence: the deeper file wins, and within a file the last matching line wins.
 *
 * @module
 */

import type { Ignore, Options as IgnoreOptions } from "ignore";
import { dirname, join, relative, sep } from "node:path";
import { denoFs, type ToolDirEntry, type ToolFs } from "./fs.ts";
import { isInside, realPathOf } from "./paths.ts";
import type { ToolContext } from "../lib/tool.ts";

/** A file or directory found by {@link walk}. */
export interface WalkEntry {
  /** The path relative to the walk's root, with `/` separators. */
  path: string;
  /** The absolute path. */
  absolute: string;
  /** Whether it is a directory (only yielded with `includeDirs`). */
  isDirectory: boolean;
  /** Whether it is a symbolic link (to a file, or, with `includeDirs`, to a directory). */
  isSymlink: boolean;
}

/** How {@link walk} walks. */
export interface WalkOptions {
  /** The file system (default: Deno's). */
  fs?: ToolFs;
  /** Stops the walk: the generator throws the signal's reason. */
  signal?: AbortSignal;
  /** Also yield directories, each before its contents (default false). */
  includeDirs?: boolean;
  /** Honour `.gitignore` files and `.git/info/exclude` (default true). */
  gitignore?: boolean;
  /**
   * More patterns to skip, in `.gitignore` syntax, relative to the root (like an `.ignore`
   * file). They only exclude: a `!` pattern cannot bring back what a `.gitignore` excludes.
   */
  ignore?: readonly string[];
  /**
   * A directory below the root, as a relative `/`-separated path, to walk instead of the whole
   * root; the root's `.gitignore` still applies and paths stay relative to the root.
   */
  start?: string;
  /**
   * The permission rules' check of a real path (a tool context's `checkPath`): what it refuses
   * for reading is left out (a directory with all it holds) and reported to `onRefused`. A
   * symlink is checked as the real path it leads to.
   */
  checkPath?: ToolContext["checkPath"];
  /** Told of each entry left out by `checkPath`: its real path, and the refusal. */
  onRefused?: (path: string, reason: string) => void;
}

interface _Item {
  rel: string; // relative to the walk's root
  key: string; // relative to the ignore rules' base directory
  absolute: string;
  isDirectory: boolean;
  isSymlink: boolean;
}

const _decoder = new TextDecoder();

/** `npm:ignore`, loaded by the first walk: a CommonJS package, which costs a start to load. */
let _ignore: Promise<(options: IgnoreOptions) => Ignore> | undefined;

/**
 * Walks the files below `root` (an absolute path to a directory), depth first with names in
 * code-unit order, yielding paths relative to `root`. A directory a `.gitignore` excludes is
 * not entered; when the root (or `start`) itself is excluded by the rules above it, those
 * rules are dropped, since it was named on purpose. Directories below it that cannot be read
 * are left out; only the root's own failure throws.
 *
 * @example
 * ```ts
 * import { memoryFs } from "../lib/testing/memory_fs.ts";
 * import { walk } from "./walk.ts";
 * const fs = memoryFs();
 * fs.put("/w/.gitignore", "*.log\n");
 * fs.put("/w/src/a.ts", "");
 * fs.put("/w/debug.log", "");
 * const paths = [];
 * for await (const entry of walk("/w", { fs })) paths.push(entry.path);
 * if (paths.join() !== ".gitignore,src/a.ts") throw new Error(paths.join());
 * ```
 */
export async function* walk(root: string, options: WalkOptions = {}): AsyncGenerator<WalkEntry> {
  const { fs = denoFs, signal, includeDirs = false, gitignore = true } = options;
  const ignore =
    await (_ignore ??= import("ignore").then((module) =>
      module.default as (options: IgnoreOptions) => Ignore
    ));
  const extra = options.ignore?.length
    ? ignore({ ignorecase: false, allowRelativePaths: true }).add(options.ignore)
    : undefined;
  const start = (options.start ?? "").split("/").filter((part) => part && part !== ".").join("/");
  const startDir = start ? join(root, ...start.split("/")) : root;
  signal?.throwIfAborted();
  // Below the start no directory symlink is followed: a real path is the start's and the rest.
  let real = (path: string) => path;
  if (options.checkPath) {
    const realStart = await fs.realPath(startDir).catch(() => startDir);
    real = (path) => `${realStart}${path.slice(startDir.length)}`;
    if (_refused(realStart, options)) return;
  }

  let rules: Ignore | undefined;
  let base = root;
  let patterns = 0;
  if (gitignore) {
    const repo = await _findRepo(fs, root);
    base = repo ?? root;
    rules = ignore({ ignorecase: false, allowRelativePaths: true });
    if (repo) patterns += await _addFile(fs, rules, join(repo, ".git", "info", "exclude"), "");
    // The .gitignore files of the directories from the base down to the start, exclusive.
    const chain = _posix(relative(base, startDir)).split("/").filter(Boolean);
    for (let depth = 0; depth < chain.length; depth++) {
      const key = chain.slice(0, depth).join("/");
      patterns += await _addFile(
        fs,
        rules,
        join(base, ...chain.slice(0, depth), ".gitignore"),
        key,
      );
    }
    if (chain.length && rules.ignores(`${chain.join("/")}/`)) {
      base = startDir;
      rules = ignore({ ignorecase: false, allowRelativePaths: true });
      patterns = 0;
    }
  }

  const stack: _Item[] = [{
    rel: start,
    key: _posix(relative(base, startDir)),
    absolute: startDir,
    isDirectory: true,
    isSymlink: false,
  }];
  let ruled = patterns > 0; // skip testing paths until some rule exists
  while (stack.length) {
    signal?.throwIfAborted();
    const item = stack.pop()!;
    if (item.rel.length > start.length && (!item.isDirectory || includeDirs)) {
      yield {
        path: item.rel,
        absolute: item.absolute,
        isDirectory: item.isDirectory,
        isSymlink: item.isSymlink,
      };
    }
    if (!item.isDirectory || item.isSymlink) continue;

    let entries;
    try {
      entries = await _list(fs, item.absolute);
    } catch (error) {
      if (item.absolute === startDir) throw error;
      continue; // a directory below that cannot be read (or just vanished) is left out
    }
    if (rules && entries.some((entry) => entry.name === ".gitignore" && !entry.isDirectory)) {
      if (await _addFile(fs, rules, _join(item.absolute, ".gitignore"), item.key)) ruled = true;
    }
    const children: _Item[] = [];
    for (const entry of entries) {
      if (entry.name === ".git") continue;
      const absolute = _join(item.absolute, entry.name);
      let { isFile, isDirectory } = entry;
      if (entry.isSymlink || (!isFile && !isDirectory)) {
        // A symlink, or a file system that did not say: look at what the path leads to.
        const info = await (entry.isSymlink ? fs.stat(absolute) : fs.lstat(absolute)).catch(
          () => undefined,
        );
        if (!info) continue;
        ({ isFile, isDirectory } = info);
        if (isDirectory && entry.isSymlink && !includeDirs) continue;
      }
      if (!isFile && !isDirectory) continue; // sockets, FIFOs, devices
      const rel = item.rel ? `${item.rel}/${entry.name}` : entry.name;
      const key = item.key ? `${item.key}/${entry.name}` : entry.name;
      // Git matches symlinks as files, whatever they point to.
      const asDir = isDirectory && !entry.isSymlink;
      if (ruled && rules!.ignores(asDir ? `${key}/` : key)) continue;
      if (extra?.ignores(asDir ? `${rel}/` : rel)) continue;
      if (options.checkPath) {
        // A symlink is checked as where it leads (gone, or changed on the way: left out too).
        const target = entry.isSymlink
          ? await fs.realPath(absolute).catch(() => undefined)
          : real(absolute);
        if (target === undefined || _refused(target, options)) continue;
      }
      children.push({ rel, key, absolute, isDirectory, isSymlink: entry.isSymlink });
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
  }
}

/**
 * The entries of a directory, sorted by name. Deno's async `readDir` costs an async op per
 * entry (several times a sync listing here), so Deno's file system is listed synchronously:
 * one directory at a time, which keeps each pause of the event loop short.
 */
async function _list(fs: ToolFs, dir: string): Promise<ToolDirEntry[]> {
  const entries: ToolDirEntry[] = [];
  if (fs === denoFs) entries.push(...Deno.readDirSync(dir));
  else for await (const entry of fs.readDir(dir)) entries.push(entry);
  return entries.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/** Whether the rules refuse reading a real path, telling `onRefused` why. */
function _refused(real: string, options: WalkOptions): boolean {
  const refusal = options.checkPath!(real, "read");
  if (refusal) options.onRefused?.(real, refusal);
  return refusal !== undefined;
}

function _join(dir: string, name: string): string {
  return dir.endsWith(sep) ? `${dir}${name}` : `${dir}${sep}${name}`;
}

function _hasRules(rules: Ignore): boolean {
  return rules.test("\0probe").ignored || (rules as unknown as { _rules?: { _rules?: unknown[] } })
        ._rules?._rules?.length !== 0;
}

/**
 * How the tools show paths below `target` (a real absolute path): relative to the working
 * directory when inside it (`""` for the working directory itself), else absolute. Join it to
 * a walk's paths with {@link joinDisplay}.
 *
 * @example
 * ```ts
 * import { memoryFs } from "../lib/testing/memory_fs.ts";
 * import { displayPrefix, joinDisplay } from "./walk.ts";
 * const fs = memoryFs();
 * fs.put("/w/src/a.ts", "");
 * const prefix = await displayPrefix(fs, "/w", "/w/src");
 * if (joinDisplay(prefix, "a.ts") !== "src/a.ts") throw new Error(prefix);
 * ```
 */
export async function displayPrefix(fs: ToolFs, cwd: string, target: string): Promise<string> {
  const realCwd = await realPathOf(fs, cwd, ".");
  return isInside(target, realCwd) ? _posix(relative(realCwd, target)) : target;
}

/**
 * Joins a {@link displayPrefix} and a path relative to it.
 *
 * @example
 * ```ts
 * import { joinDisplay } from "./walk.ts";
 * if (joinDisplay("", "a.ts") !== "a.ts" || joinDisplay("src", "a.ts") !== "src/a.ts") {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function joinDisplay(prefix: string, path: string): string {
  return !prefix ? path : prefix.endsWith("/") ? `${prefix}${path}` : `${prefix}/${path}`;
}

/**
 * Rewrites one `.gitignore` line of the directory `dir` (relative to the rules' base) so that
 * it means the same from the base: `foo` becomes `dir/**\/foo`, `/foo` and `a/b` become
 * `dir/foo` and `dir/a/b`. Comments and blank lines give `undefined`.
 *
 * @example
 * ```ts
 * import { rebasePattern } from "./walk.ts";
 * const rebased = [rebasePattern("*.log", "src"), rebasePattern("!/dist/", "src")];
 * if (rebased.join() !== "src/**\/*.log,!src/dist/") throw new Error(rebased.join());
 * ```
 */
export function rebasePattern(line: string, dir: string): string | undefined {
  if (line.endsWith("\r")) line = line.slice(0, -1);
  if (line.trim() === "" || line.startsWith("#")) return undefined;
  if (!dir) return line;
  const negate = line.startsWith("!") ? "!" : "";
  let body = negate ? line.slice(1) : line;
  const slash = body.indexOf("/");
  const anchored = slash !== -1 && slash < body.trimEnd().length - 1;
  if (body.startsWith("/")) body = body.slice(1);
  const prefix = dir.replace(/[\\*?[\]]/g, "\\$&").replace(/^[!#]/, "\\$&");
  return `${negate}${prefix}${anchored ? "/" : "/**/"}${body}`;
}

/**
 * Adds the lines of an ignore file that lies in `dir` (relative to the rules' base); returns
 * how many patterns it had.
 */
async function _addFile(fs: ToolFs, rules: Ignore, path: string, dir: string): Promise<number> {
  let text: string;
  try {
    text = _decoder.decode(await fs.readFile(path));
  } catch {
    return 0; // missing or unreadable: no rules
  }
  const lines: string[] = [];
  for (const line of text.split("\n")) {
    const pattern = rebasePattern(line, dir);
    if (pattern !== undefined) lines.push(pattern);
  }
  rules.add(lines);
  return lines.length;
}

/**
 * The top of the git work tree holding `dir` (the nearest directory with a `.git`), if any.
 * With Deno's file system it only climbs while read access is already granted, so that it
 * never makes Deno prompt for a directory the user did not name.
 */
async function _findRepo(fs: ToolFs, dir: string): Promise<string | undefined> {
  for (let current = dir;; current = dirname(current)) {
    if (fs === denoFs && !_granted(current)) return undefined;
    try {
      await fs.lstat(join(current, ".git"));
      return current;
    } catch {
      // not here: try the parent
    }
    if (dirname(current) === current) return undefined;
  }
}

function _granted(path: string): boolean {
  try {
    return Deno.permissions.querySync({ name: "read", path }).state === "granted";
  } catch {
    return false;
  }
}

function _posix(path: string): string {
  return sep === "/" ? path : path.split(sep).join("/");
}
