/**
 * What a sandboxed command leaves behind, past the read-only guards, that would run code outside
 * the sandbox later: a repository of its own registered in a guarded repository's index (a
 * gitlink, which the user's next `git status` looks into), taken out of the index again (see
 * `gitlinks.ts`); and a repository it made where nothing guards its config, named (see
 * `made_repositories.ts`). Watched from the sandbox's start (`prepareSandbox`) to its end, and
 * told in sentences meant for both the model and the user.
 *
 * The repositories watched are those whose config the sandbox keeps read-only (see
 * `guardPlan`): the workspace's, and the nested ones it found.
 *
 * @module
 */

import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import { type GitlinkFinding, type WatchedRepository, watchGitlinks } from "./gitlinks.ts";
import { madeRepositories, type MadeRepository } from "./made_repositories.ts";
import type { GuardPlan } from "./protected.ts";
import { readSmallTextSync } from "./read_small.ts";

/** Options of {@link watchLeftovers}. */
export interface WatchLeftoversOptions {
  /** The command's working directory (a real path): paths are told relative to it. */
  cwd: string;
  /** The writable roots (real paths). */
  roots: readonly string[];
  /** What the sandbox guards (`guardPlan`). */
  plan: GuardPlan;
  /** Hidden paths (real). */
  hidden?: readonly string[];
  /** The `bwrap` that runs git when an entry is taken out of an index. */
  bwrap?: string;
}

/** Something a sandboxed command left behind, and what became of it. */
export interface Leftover {
  /** What was undone or found, and why it matters, in sentences for the model and the user. */
  text: string;
  /**
   * Whether it was part of what the command did that was undone (or should have been, and could
   * not be); otherwise it is only said.
   */
  undone: boolean;
}

/** What a sandbox's command is watched for, from its start. */
export interface LeftoverWatch {
  /**
   * Once the sandbox has ended: undoes what can be undone, and says what was undone or found
   * (nothing, most of the time). Called again, it says nothing.
   */
  check(): Promise<Leftover[]>;
}

/**
 * Starts watching what a sandboxed command may leave behind: call it as the sandbox is prepared,
 * and `check()` once it has ended.
 *
 * @example
 * ```ts
 * import { guardPlan } from "./protected.ts";
 * import { watchLeftovers } from "./leftovers.ts";
 * const ws = Deno.realPathSync(Deno.makeTempDirSync());
 * const plan = guardPlan({ cwd: ws, writable: [ws] });
 * const watch = watchLeftovers({ cwd: ws, roots: [ws], plan });
 * Deno.mkdirSync(`${ws}/tools/x`, { recursive: true });
 * new Deno.Command("git", { args: ["init", "-q"], cwd: `${ws}/tools/x` }).outputSync();
 * const [said] = await watch.check();
 * if (!said.text.includes("git repository at tools/x") || said.undone) throw new Error(said.text);
 * Deno.removeSync(ws, { recursive: true });
 * ```
 */
export function watchLeftovers(options: WatchLeftoversOptions): LeftoverWatch {
  const since = Date.now();
  const repositories = _guardedRepositories(options.plan);
  const gitlinks = watchGitlinks(repositories, { bwrap: options.bwrap });
  const guarded = new Set(repositories.map((repository) => repository.workTree));
  for (const path of [...options.plan.existing, ...options.plan.missing.map((e) => e.path)]) {
    if (basename(path) === ".git") guarded.add(dirname(path));
  }
  let checked = false;
  return {
    async check() {
      if (checked) return [];
      checked = true;
      const where = (path: string) => _shown(options.cwd, path);
      const found = await gitlinks.check();
      const said = found.map((finding) => ({
        text: _gitlinkSentence(finding, where),
        undone: true,
      }));
      const handled = new Set(found.map((finding) => join(finding.workTree, finding.path)));
      const made = madeRepositories({
        roots: options.roots,
        hidden: options.hidden,
        guarded,
        since,
      });
      for (const repository of made) {
        if (!handled.has(repository.path)) {
          said.push({ text: _madeSentence(repository, where), undone: false });
        }
      }
      return said;
    },
  };
}

/**
 * The repositories whose config and hooks the plan keeps read-only, with their work trees: that
 * of a `.git` directory is its parent; that of a git directory a `.git` file points to, the
 * file's directory. Others (a submodule's inside `.git/modules`, a linked worktree's) lie in a
 * read-only entry, their index with them.
 */
function _guardedRepositories(plan: GuardPlan): WatchedRepository[] {
  const gitDirs = new Set<string>();
  for (const path of [...plan.existing, ...plan.missing.map((entry) => entry.path)]) {
    if (["config", "hooks"].includes(basename(path))) gitDirs.add(dirname(path));
  }
  const found: WatchedRepository[] = [];
  for (const gitDir of gitDirs) {
    if (basename(gitDir) === ".git") found.push({ gitDir, workTree: dirname(gitDir) });
  }
  for (const path of plan.existing) {
    if (basename(path) !== ".git") continue;
    const gitDir = _gitFileTarget(path);
    if (gitDir && gitDirs.has(gitDir) && basename(gitDir) !== ".git") {
      found.push({ gitDir, workTree: dirname(path) });
    }
  }
  return found;
}

/** The real path of the git directory a `.git` file points to. */
function _gitFileTarget(file: string): string | undefined {
  try {
    if (!Deno.lstatSync(file).isFile) return undefined;
    const target = readSmallTextSync(file, 4096)?.match(/^gitdir:\s*(.+?)\s*$/m)?.[1];
    return target ? Deno.realPathSync(resolve(dirname(file), target)) : undefined;
  } catch {
    return undefined;
  }
}

function _gitlinkSentence(finding: GitlinkFinding, where: (path: string) => string): string {
  if (!finding.path) {
    return `The sandbox could not read git's index in ${where(finding.workTree)} to check ` +
      `what the command registered there: ${finding.error}. Check \`git ls-files --stage\` ` +
      `for entries of mode 160000 before running git there.`;
  }
  const at = where(join(finding.workTree, finding.path));
  const why = `the command registered a git repository there, whose config (which the sandbox ` +
    `does not guard) git outside the sandbox would run at every status (core.fsmonitor, …)`;
  const keep = `remove ${at}/.git unless it was asked for (a commit holding ${at} brings it ` +
    `back when checked out)`;
  if (finding.removed) {
    return `The sandbox took ${at} out of git's index: ${why}. Its files are left as they are; ` +
      `${keep}.`;
  }
  return `The sandbox could not take ${at} out of git's index (${finding.error}): ${why}. Run ` +
    `\`git rm --cached -- ${finding.path}\` in ${where(finding.workTree)} before any git ` +
    `status there, or ${keep}.`;
}

function _madeSentence(repository: MadeRepository, where: (path: string) => string): string {
  const at = where(repository.path);
  const what = repository.what === "made"
    ? `The command made a git repository at ${at}`
    : `The command made or changed the git repository at ${at}`;
  return `${what}. Its config is not guarded by the sandbox: git run there, or after a \`git ` +
    `add\` of it, runs what that config names (core.fsmonitor, …). Remove ${at}/.git unless ` +
    `it was asked for.`;
}

/** A path relative to `cwd` when inside it, else as it is. */
function _shown(cwd: string, path: string): string {
  const rel = relative(cwd, path);
  if (rel === "") return ".";
  return rel === ".." || rel.startsWith("../") || isAbsolute(rel) ? path : rel;
}
