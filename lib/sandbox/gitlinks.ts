/**
 * Gitlinks a sandboxed command leaves in git's index. The sandbox keeps a repository's config
 * and hooks read-only but its index writable, so that commits work inside; a command could then
 * make a repository of its own (`git init sub`, a `core.fsmonitor` in its config) and register
 * it in the index (`git add sub`, a gitlink), or make one in the empty directory of a submodule
 * the index already holds. The user's next `git status` outside the sandbox looks into every
 * gitlink that holds a repository, and runs what that repository's config names.
 *
 * So when a sandbox starts, {@link watchGitlinks} records each guarded repository's index (its
 * inode, size and times) and the gitlinks it holds, each with what is there: the `.git` and the
 * small files it leads to (`config`, `commondir`), by content. Once the command has ended, an
 * index that did not change costs a `stat`, and each of its gitlinks the reading of those small
 * files; one that changed is read again (version 2 to 4, without running git: see
 * `git_index.ts`). A gitlink that holds a repository and that the index did not hold at the
 * start, or whose repository is no longer what it was, is taken out of the index again. Nothing
 * legitimate is lost: `git submodule add` fails in the sandbox anyway (the repository's
 * `modules` directory is read-only), and the repository's files stay where they are.
 *
 * The entries are taken out by git itself (`update-index --force-remove`, which only removes:
 * no check of the submodule, whose status would run its config), as no code of the workspace's
 * can make it run anything: no system or user config, `core.fsmonitor` off and hooks nowhere on
 * its command line (which wins over any config), paths given on stdin, not as pathspecs; and in
 * a sandbox of its own, without network, where only the git directory may be written, its
 * config and hooks read-only. An index this module cannot read alone (split, unknown, or too
 * large) is listed the same way, with `ls-files`.
 *
 * An index read in the second after it last changed is read again next time whatever its times
 * say: the kernel's change time, which a command cannot set, is only known here to the second.
 *
 * @module
 */

import { join, resolve } from "node:path";
import { type IndexGitlink, indexGitlinks } from "./git_index.ts";
import { PROTECTED_GIT_NAMES } from "./protected.ts";
import { readSmallFileSync, readSmallTextSync } from "./read_small.ts";

/** A repository whose index a sandbox watches. */
export interface WatchedRepository {
  /** Its work tree (a real path). */
  workTree: string;
  /** Its git directory (a real path), usually `<workTree>/.git`. */
  gitDir: string;
}

/** A gitlink that held a repository the index did not hold at the start, and what was done. */
export interface GitlinkFinding {
  /** The work tree of the repository whose index held it. */
  workTree: string;
  /** Its path in that work tree (invalid UTF-8 escaped). */
  path: string;
  /** Whether it was taken out of the index. */
  removed: boolean;
  /** Why it could not be, when it was not. */
  error?: string;
}

/** Options of {@link watchGitlinks}. */
export interface WatchGitlinksOptions {
  /** The `bwrap` to run git in (default: `bwrap` on `PATH`). */
  bwrap?: string;
}

/** The gitlinks of the watched indexes, as they were at the start. */
export interface GitlinkWatch {
  /**
   * Once the sandbox has ended: takes out of each index the gitlinks that hold a repository the
   * index did not hold at the start, and says which. Called again, it does nothing.
   */
  check(): Promise<GitlinkFinding[]>;
}

/** An index's identity: a change of content changes at least one of these. */
interface _Key {
  ino: number | null;
  size: number;
  mtime: number;
  ctime: number;
}

/** What an index holds now: its gitlinks, or why they are unknown. */
interface _Listing {
  gitlinks?: IndexGitlink[];
  error?: string;
}

interface _Start {
  repository: WatchedRepository;
  /** By path: what each gitlink held at the start (`null`: no repository). */
  held: Map<string, string | null>;
}

/**
 * Indexes read: by path, the key they had and their gitlinks, and whether the key tells every
 * later change (it does not when the index changed in the second before it was read).
 */
const _read = new Map<string, { key: _Key; gitlinks: IndexGitlink[]; sure: boolean }>();
const _READ_KEPT = 32;
/** Larger indexes are listed by git. */
const _MAX_INDEX = 256 * 1024 * 1024;
/** Larger files of a repository are told apart by their size and times. */
const _MAX_SMALL = 1024 * 1024;
/** How long git may take in its sandbox. */
const _GIT_TIMEOUT_MS = 10_000;
/** How old a lock on the index is before nothing but the command can have left it. */
const _LOCK_AGE_MS = 1_000;

/**
 * Records the gitlinks of each repository's index, and what each holds, to be checked once the
 * sandbox has ended. Never throws: what cannot be read at the start counts as holding nothing.
 *
 * @example
 * ```ts
 * import { watchGitlinks } from "./gitlinks.ts";
 * const ws = Deno.realPathSync(Deno.makeTempDirSync());
 * const git = (...args: string[]) => new Deno.Command("git", { args, cwd: ws }).outputSync();
 * git("init", "-q");
 * const watch = watchGitlinks([{ workTree: ws, gitDir: `${ws}/.git` }]);
 * git("-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "x");
 * if ((await watch.check()).length !== 0) throw new Error("a commit is no gitlink");
 * Deno.removeSync(ws, { recursive: true });
 * ```
 */
export function watchGitlinks(
  repositories: readonly WatchedRepository[],
  options: WatchGitlinksOptions = {},
): GitlinkWatch {
  const starts: _Start[] = repositories.map((repository) => {
    const listing = _list(repository, options.bwrap);
    const held = new Map<string, string | null>();
    for (const link of listing.gitlinks ?? []) {
      held.set(_id(link), _holding(repository.workTree, link));
    }
    return { repository, held };
  });
  let checked = false;
  return {
    async check() {
      if (checked) return [];
      checked = true;
      const findings: GitlinkFinding[] = [];
      for (const start of starts) findings.push(...await _check(start, options.bwrap));
      return findings;
    },
  };
}

async function _check(start: _Start, bwrap: string | undefined): Promise<GitlinkFinding[]> {
  const { repository } = start;
  const listing = _list(repository, bwrap);
  if (!listing.gitlinks) {
    return [{
      workTree: repository.workTree,
      path: "",
      removed: false,
      error: `its index could not be read (${listing.error})`,
    }];
  }
  const suspects = new Map<string, IndexGitlink>();
  for (const link of listing.gitlinks) {
    const holding = _holding(repository.workTree, link);
    if (holding === null) continue; // No repository there: git does not look inside.
    const id = _id(link);
    if (start.held.has(id) && start.held.get(id) === holding) continue;
    suspects.set(id, link);
  }
  if (suspects.size === 0) return [];
  const failed = await _remove(repository, [...suspects.values()], bwrap);
  const after = _list(repository, bwrap);
  const left = new Set((after.gitlinks ?? []).map(_id));
  return [...suspects.values()].map((link) => {
    const removed = after.gitlinks !== undefined && !left.has(_id(link));
    return {
      workTree: repository.workTree,
      path: _shown(link),
      removed,
      ...(removed ? {} : { error: failed ?? after.error ?? "git left it there" }),
    };
  });
}

/**
 * The gitlinks of a repository's index: from what was read before when its key is the same
 * (and tells every change since), else read now, by git when this module cannot read it alone.
 */
function _list(repository: WatchedRepository, bwrap: string | undefined): _Listing {
  const index = join(repository.gitDir, "index");
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(index);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { gitlinks: [] };
    return { error: (error as Error).message };
  }
  // Not a file: git cannot read entries from it either.
  if (!info.isFile) return { gitlinks: [] };
  const key: _Key = {
    ino: info.ino,
    size: info.size,
    mtime: info.mtime?.getTime() ?? 0,
    ctime: info.ctime?.getTime() ?? Date.now(),
  };
  const cached = _read.get(index);
  if (cached?.sure && _same(cached.key, key)) return { gitlinks: cached.gitlinks };
  // The change time is known to the second: a change in the same second would not show.
  const sure = key.ctime < Math.floor(Date.now() / 1000) * 1000 - 1000;
  let gitlinks: IndexGitlink[] | undefined;
  if (info.size <= _MAX_INDEX) {
    try {
      const bytes = readSmallFileSync(index, _MAX_INDEX);
      const read = bytes && indexGitlinks(bytes, { hashBytes: _hashBytes(repository.gitDir) });
      if (read && !read.split) gitlinks = read.gitlinks;
    } catch {
      // Git may read what this does not: it is asked below.
    }
  }
  if (!gitlinks) {
    const listed = _gitListing(repository, bwrap);
    if (!listed.gitlinks) return { error: listed.error };
    gitlinks = listed.gitlinks;
  }
  _read.delete(index);
  _read.set(index, { key, gitlinks, sure });
  if (_read.size > _READ_KEPT) _read.delete(_read.keys().next().value!);
  return { gitlinks };
}

/**
 * What a gitlink's directory holds: `null` when no repository (no `.git`), else the `.git` and
 * the small files of the git directory it leads to that decide what git runs there, by content.
 */
function _holding(workTree: string, link: IndexGitlink): string | null {
  // A path that is not text cannot be looked at: it counts as changed.
  if (link.path === undefined) return `bytes ${link.bytes.join(",")}`;
  const dir = resolve(workTree, link.path);
  const dotGit = join(dir, ".git");
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(dotGit);
  } catch {
    return null;
  }
  if (info.isDirectory) return `dir\n${_gitDirFiles(dotGit)}`;
  if (!info.isFile) return `other ${info.ino}`;
  const text = _small(dotGit);
  const target = text?.match(/^gitdir:\s*(.+?)\s*$/m)?.[1];
  return `file ${text}\n${target ? _gitDirFiles(resolve(dir, target)) : ""}`;
}

function _gitDirFiles(gitDir: string): string {
  return ["config", "commondir"].map((name) => `${name}: ${_small(join(gitDir, name)) ?? "-"}`)
    .join("\n");
}

/** A small file's text; a larger one's size and times; `undefined` when absent. */
function _small(path: string): string | undefined {
  try {
    const info = Deno.statSync(path);
    if (!info.isFile || info.size > _MAX_SMALL) {
      return `${info.size} ${info.ino} ${info.mtime?.getTime()} ${info.ctime?.getTime()}`;
    }
    return readSmallTextSync(path, _MAX_SMALL) ?? `changed ${info.ino}`;
  } catch {
    return undefined;
  }
}

/** The length of the repository's object names: 32 bytes when its config says SHA-256. */
function _hashBytes(gitDir: string): 20 | 32 {
  const config = _small(join(gitDir, "config")) ?? "";
  return /^\s*objectformat\s*=\s*sha256\s*$/im.test(config) ? 32 : 20;
}

/**
 * The `bwrap` arguments that run git over a repository and nothing else: the file system
 * read-only, the git directory writable when `write`, its config and hooks read-only all the
 * same, no network, no namespace shared.
 */
function _gitSandbox(repository: WatchedRepository, write: boolean, git: string[]): string[] {
  const { workTree, gitDir } = repository;
  const args = [
    "--die-with-parent",
    "--unshare-all",
    "--cap-drop",
    "ALL",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
    "--ro-bind",
    workTree,
    workTree,
    write ? "--bind" : "--ro-bind",
    gitDir,
    gitDir,
  ];
  for (const entry of PROTECTED_GIT_NAMES) {
    const path = join(gitDir, entry.name);
    if (write && _exists(path)) args.push("--ro-bind", path, path);
  }
  args.push(
    "--chdir",
    workTree,
    "--",
    "git",
    `--git-dir=${gitDir}`,
    `--work-tree=${workTree}`,
    // On the command line, these win over whatever config the repository has.
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    ...git,
  );
  return args;
}

/** Git's environment: none of the user's or the system's config, no pager, no prompt. */
function _gitEnv(): Record<string, string> {
  const path = Deno.permissions.querySync({ name: "env", variable: "PATH" }).state === "granted"
    ? Deno.env.get("PATH")
    : undefined;
  return {
    PATH: path || "/usr/local/bin:/usr/bin:/bin",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_ATTR_NOSYSTEM: "1",
    GIT_TERMINAL_PROMPT: "0",
    GIT_NO_REPLACE_OBJECTS: "1",
    GIT_OPTIONAL_LOCKS: "0",
    GIT_PAGER: "cat",
    PAGER: "cat",
    HOME: "/nonexistent",
    LC_ALL: "C",
  };
}

/** The gitlinks as `git ls-files --stage` lists them, run in {@link _gitSandbox}. */
function _gitListing(
  repository: WatchedRepository,
  bwrap: string | undefined,
): { gitlinks?: IndexGitlink[]; error?: string } {
  let output: Deno.CommandOutput;
  try {
    output = new Deno.Command(bwrap ?? "bwrap", {
      args: _gitSandbox(repository, false, ["ls-files", "--stage", "-z"]),
      env: _gitEnv(),
      clearEnv: true,
      stdin: "null",
    }).outputSync();
  } catch (error) {
    return { error: `git could not run: ${(error as Error).message}` };
  }
  if (!output.success) return { error: new TextDecoder().decode(output.stderr).trim() };
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const gitlinks: IndexGitlink[] = [];
  const data = output.stdout;
  // Each line: `<mode> <object> <stage>\t<path>\0`.
  for (let at = 0; at < data.length;) {
    let end = data.indexOf(0, at);
    if (end < 0) end = data.length;
    const tab = data.indexOf(9, at);
    if (
      tab > at && tab < end && new TextDecoder().decode(data.subarray(at, at + 7)) === "160000 "
    ) {
      const bytes = data.slice(tab + 1, end);
      let path: string | undefined;
      try {
        path = decoder.decode(bytes);
      } catch {
        path = undefined;
      }
      gitlinks.push({ bytes, path });
    }
    at = end + 1;
  }
  return { gitlinks };
}

/**
 * Takes the gitlinks out of the index; why not, when it failed. What the command may have left
 * in the way is cleared first: a git directory it made read-only is made writable again, and a
 * lock on the index (`index.lock`, which git leaves only while it writes) once it is a second
 * old, since nothing of the command is left to hold it.
 */
async function _remove(
  repository: WatchedRepository,
  gitlinks: IndexGitlink[],
  bwrap: string | undefined,
): Promise<string | undefined> {
  const { gitDir } = repository;
  try {
    const mode = Deno.statSync(gitDir).mode;
    if (mode !== null && !(mode & 0o200)) Deno.chmodSync(gitDir, (mode & 0o7777) | 0o700);
  } catch {
    // Git says what is wrong.
  }
  const failed = await _updateIndex(repository, gitlinks, bwrap);
  const lock = join(gitDir, "index.lock");
  if (!failed || !_exists(lock)) return failed;
  for (let waited = 0; waited < _LOCK_AGE_MS * 2; waited += 100) {
    const info = _lstat(lock);
    if (!info) break;
    if (Date.now() - (info.mtime?.getTime() ?? 0) >= _LOCK_AGE_MS) {
      try {
        Deno.removeSync(lock, { recursive: info.isDirectory });
      } catch {
        return failed;
      }
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return await _updateIndex(repository, gitlinks, bwrap);
}

/** Runs `git update-index --force-remove` over the gitlinks in {@link _gitSandbox}. */
async function _updateIndex(
  repository: WatchedRepository,
  gitlinks: IndexGitlink[],
  bwrap: string | undefined,
): Promise<string | undefined> {
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(bwrap ?? "bwrap", {
      args: _gitSandbox(repository, true, ["update-index", "--force-remove", "-z", "--stdin"]),
      env: _gitEnv(),
      clearEnv: true,
      stdin: "piped",
      stdout: "null",
      stderr: "piped",
    }).spawn();
  } catch (error) {
    return `git could not run: ${(error as Error).message}`;
  }
  const timer = setTimeout(() => child.kill("SIGKILL"), _GIT_TIMEOUT_MS);
  try {
    const writer = child.stdin.getWriter();
    const list = new Uint8Array(gitlinks.reduce((sum, link) => sum + link.bytes.length + 1, 0));
    let at = 0;
    for (const link of gitlinks) {
      list.set(link.bytes, at);
      at += link.bytes.length + 1;
    }
    await writer.write(list).catch(() => {});
    await writer.close().catch(() => {});
    const output = await child.output();
    return output.success ? undefined : new TextDecoder().decode(output.stderr).trim() ||
      `git exited with ${output.signal ?? output.code}`;
  } finally {
    clearTimeout(timer);
  }
}

function _same(a: _Key, b: _Key): boolean {
  return a.ino === b.ino && a.size === b.size && a.mtime === b.mtime && a.ctime === b.ctime;
}

function _id(link: IndexGitlink): string {
  return link.path ?? `\0${link.bytes.join(",")}`;
}

function _shown(link: IndexGitlink): string {
  return link.path ?? new TextDecoder().decode(link.bytes);
}

function _exists(path: string): boolean {
  return _lstat(path) !== undefined;
}

function _lstat(path: string): Deno.FileInfo | undefined {
  try {
    return Deno.lstatSync(path);
  } catch {
    return undefined;
  }
}
