/**
 * Git repositories a sandboxed command made, or whose config it changed, where the sandbox did
 * not guard them. Nothing outside runs them by itself: an untracked repository is only listed by
 * `git status`. But git run inside one (by the user, or by a shell prompt that shows git's status
 * at every `cd`) runs what its config names, and so does the user's next `git status` once a `git
 * add -A` has registered it. The agent cannot tell them from a project the user asked for (`git
 * clone`, a scaffolding tool's `git init`), so it says where they are.
 *
 * Looked for as the sandbox's guards look for nested projects (see `guardPlan`): within three
 * levels of each writable root, not inside hidden directories, directories whose name starts
 * with a dot, or `node_modules`, and not past a budget of directories read. A `.git` counts
 * when it, or the config it leads to, was born or changed since a second before the command
 * started (the kernel's change time, which a command cannot set, is known here to the second).
 *
 * @module
 */

import { join, resolve } from "node:path";
import { readSmallTextSync } from "./read_small.ts";

/** Options of {@link madeRepositories}. */
export interface MadeRepositoriesOptions {
  /** The writable roots (real paths). */
  roots: readonly string[];
  /** Hidden paths (real): not looked into. */
  hidden?: readonly string[];
  /** Directories whose `.git` the sandbox guarded: what they hold is not the command's doing. */
  guarded?: ReadonlySet<string>;
  /** When the command started (milliseconds since the epoch). */
  since: number;
}

/** A repository a command made, or whose config it changed. */
export interface MadeRepository {
  /** The directory holding its `.git`. */
  path: string;
  /**
   * `made` when its `.git` was born since; `changed` when it, or its config, changed since (or
   * was born: where the file system does not tell when a file was born).
   */
  what: "made" | "changed";
}

/** How deep below each writable root repositories are looked for. */
const _DEPTH = 3;
/** How many directories are read at most. */
const _BUDGET = 2_000;

/**
 * The repositories made or changed since `since` within reach of the roots (see the module's
 * documentation), outside the `guarded` directories.
 *
 * @example
 * ```ts
 * import { madeRepositories } from "./made_repositories.ts";
 * const ws = Deno.realPathSync(Deno.makeTempDirSync());
 * const since = Date.now();
 * Deno.mkdirSync(`${ws}/tools/x`, { recursive: true });
 * new Deno.Command("git", { args: ["init", "-q"], cwd: `${ws}/tools/x` }).outputSync();
 * const made = madeRepositories({ roots: [ws], since });
 * if (made.length !== 1 || made[0].path !== `${ws}/tools/x`) throw new Error("unexpected");
 * Deno.removeSync(ws, { recursive: true });
 * ```
 */
export function madeRepositories(options: MadeRepositoriesOptions): MadeRepository[] {
  const hidden = options.hidden ?? [];
  const guarded = options.guarded ?? new Set();
  const since = Math.floor(options.since / 1000) * 1000 - 1000;
  const found: MadeRepository[] = [];
  let budget = _BUDGET;
  const queue: [string, number][] = options.roots.map((root) => [root, 0]);
  while (queue.length && budget > 0) {
    const [dir, depth] = queue.shift()!;
    budget--;
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(dir)];
    } catch {
      continue;
    }
    if (!guarded.has(dir) && entries.some((entry) => entry.name === ".git")) {
      const what = _madeSince(join(dir, ".git"), since);
      if (what) found.push({ path: dir, what });
    }
    if (depth >= _DEPTH) continue;
    for (const entry of entries) {
      if (!entry.isDirectory || entry.name.startsWith(".") || entry.name === "node_modules") {
        continue;
      }
      const path = join(dir, entry.name);
      if (!hidden.some((outer) => _within(path, outer))) queue.push([path, depth + 1]);
    }
  }
  return found;
}

/** Whether a `.git` was made, or its config changed, since `since`. */
function _madeSince(dotGit: string, since: number): MadeRepository["what"] | undefined {
  const info = _lstat(dotGit);
  if (!info) return undefined;
  if ((info.birthtime?.getTime() ?? 0) >= since) return "made";
  const paths = [dotGit];
  if (info.isDirectory) paths.push(join(dotGit, "config"));
  const target = info.isFile
    ? readSmallTextSync(dotGit, 4096)?.match(/^gitdir:\s*(.+?)\s*$/m)?.[1]
    : undefined;
  if (target) paths.push(resolve(dotGit, "..", target), resolve(dotGit, "..", target, "config"));
  // Without a birth time, a change time this recent may be a birth as well.
  const changed = paths.some((path) => (_lstat(path)?.ctime?.getTime() ?? since) >= since);
  return changed ? "changed" : undefined;
}

function _lstat(path: string): Deno.FileInfo | undefined {
  try {
    return Deno.lstatSync(path);
  } catch {
    return undefined;
  }
}

function _within(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith("/") ? root : `${root}/`);
}
