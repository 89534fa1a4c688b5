/**
 * What a sandboxed command must not leave behind: the files that make programs outside the
 * sandbox run code later. The agent's own project settings (their hooks run at its next start)
 * and `.mcp.json` (the servers it starts), git's config, hooks and pointers to other
 * repositories (run by the user's next `git status`, or by a prompt that runs it at every `cd`),
 * direnv's `.envrc` (run at `cd`), the workspace settings and tasks of VS Code and JetBrains IDEs
 * (run when the folder is opened), and, where the home directory itself may be written, the
 * shells' startup files, git's user config and the directories on `PATH`.
 *
 * One list, read by both guards: the sandbox keeps these paths read-only, absent ones included
 * (see `guardPlan`), and the file tools change them only under a permission rule that names them
 * (see {@link protectedEntry}).
 *
 * Left out on purpose: `AGENTS.md` and `CLAUDE.md` (instructions the model reads, which run
 * nothing by themselves, and which users ask the agent to keep up to date), `.gitmodules` and
 * `.gitattributes` (git takes no command from them: the drivers and update commands they name
 * must be defined in a config), and `.tool-versions` or `mise.toml` (their tools ask for trust
 * themselves).
 *
 * @module
 */

import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { isPlaceholder, type Placeholder } from "./placeholders.ts";
import { readSmallTextSync } from "./read_small.ts";

/** An entry that runs code outside the sandbox once written, and why. */
export interface ProtectedName {
  /** Its name, relative to the directory it is looked for in. */
  name: string;
  /** Whether it is a file or a directory (what stands in its place when it is absent). */
  kind: "file" | "dir";
  /** What would run, in words. */
  why: string;
  /**
   * What a file standing in its place holds, when an empty one would not do (git dies on an
   * empty `commondir`; one that says `.` means the repository itself).
   */
  content?: string;
  /**
   * When its absence needs guarding too (default `always`): `never` for what git reads only
   * once something guarded already names it (`config.worktree` once the config turns it on, a
   * linked worktree's entry once a worktree points to it); `submodules` for what matters only
   * where `.gitmodules` lists submodules (a `modules` planted before `git submodule update`
   * would be taken as theirs).
   */
  absent?: "always" | "never" | "submodules";
}

/** In every project directory: the agent's, direnv's and the editors' configuration. */
export const PROTECTED_PROJECT_NAMES: readonly ProtectedName[] = [
  { name: ".agent", kind: "dir", why: "the agent's project settings, whose hooks it runs" },
  { name: ".mcp.json", kind: "file", why: "the MCP servers the agent starts" },
  { name: ".envrc", kind: "file", why: "direnv runs it on entering the directory" },
  { name: ".vscode", kind: "dir", why: "VS Code runs its tasks and settings" },
  { name: ".idea", kind: "dir", why: "JetBrains IDEs run its configurations" },
  {
    name: ".git",
    kind: "dir",
    why: "a repository made here comes with whatever config the command wrote",
  },
];

/** In a git directory: what git runs, or where it finds what it runs. */
export const PROTECTED_GIT_NAMES: readonly ProtectedName[] = [
  { name: "config", kind: "file", why: "git runs the programs it names (core.fsmonitor, …)" },
  {
    name: "config.worktree",
    kind: "file",
    why: "git runs the programs it names",
    absent: "never",
  },
  {
    name: "commondir",
    kind: "file",
    why: "it points git at another repository's config",
    content: ".\n",
  },
  { name: "hooks", kind: "dir", why: "git runs its hooks" },
  {
    name: "modules",
    kind: "dir",
    why: "the submodules' repositories, with their config and hooks",
    absent: "submodules",
  },
  {
    name: "worktrees",
    kind: "dir",
    why: "where linked worktrees find their repository",
    absent: "never",
  },
];

/** In the home directory, when a command may write it: startup files and `PATH` entries. */
export const PROTECTED_HOME_NAMES: readonly ProtectedName[] = [
  ...[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
  ].map((name) => ({ name, kind: "file" as const, why: "the shell runs it at start" })),
  { name: ".gitconfig", kind: "file", why: "git runs the programs it names" },
  { name: ".config/git", kind: "dir", why: "git runs the programs its config names" },
  { name: ".config/fish", kind: "dir", why: "fish runs its config at start" },
  { name: ".config/systemd", kind: "dir", why: "systemd starts the user's units" },
  { name: ".config/autostart", kind: "dir", why: "the desktop starts what it lists" },
  { name: ".local/bin", kind: "dir", why: "it is on PATH, ahead of the system's programs" },
  { name: "bin", kind: "dir", why: "it is on PATH, ahead of the system's programs" },
];

/** A protected entry a path falls in. */
export interface ProtectedEntry {
  /** The protected entry itself (the path, or the directory holding it). */
  path: string;
  /** The name a rule must mention to be explicit about it (`.git`, `.envrc`, `.bashrc`, …). */
  anchor: string;
  /** What would run, in words. */
  why: string;
}

/**
 * The protected entry `path` is or lies in, by name, at any depth: a directory or file of
 * {@link PROTECTED_PROJECT_NAMES} anywhere, a `.git` file (it points git elsewhere) and the
 * entries of {@link PROTECTED_GIT_NAMES} in any `.git`, and, under `home`, the entries of
 * {@link PROTECTED_HOME_NAMES}. Names are compared ignoring case (case-insensitive file systems
 * find `.Git/Config` as `.git/config`). `path` is absolute; `undefined` when it is none of these.
 *
 * @example
 * ```ts
 * import { protectedEntry } from "./protected.ts";
 * if (protectedEntry("/w/pkg/.git/hooks/pre-commit")?.path !== "/w/pkg/.git/hooks") {
 *   throw new Error("unexpected");
 * }
 * if (protectedEntry("/w/.agent/settings.json")?.anchor !== ".agent") throw new Error("unexpected");
 * if (protectedEntry("/home/ada/.bashrc", "/home/ada")?.anchor !== ".bashrc") {
 *   throw new Error("unexpected");
 * }
 * if (protectedEntry("/w/.git/HEAD") || protectedEntry("/w/src/main.ts")) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function protectedEntry(path: string, home?: string): ProtectedEntry | undefined {
  const parts = resolve(path).split(sep).filter(Boolean);
  const lower = parts.map((part) => part.toLowerCase());
  const at = (count: number) => `${sep}${parts.slice(0, count).join(sep)}`;
  for (let i = 0; i < parts.length; i++) {
    // A git directory by another name (`git init --separate-git-dir=gd`): told by what it
    // holds, looked at only when the next name is one git runs code from.
    if (lower[i] !== ".git" && i + 1 < parts.length) {
      const inner = PROTECTED_GIT_NAMES.find((entry) => entry.name === lower[i + 1]);
      if (inner && _isGitDir(at(i + 1))) {
        return { path: at(i + 2), anchor: parts[i], why: inner.why };
      }
    }
    if (lower[i] === ".git") {
      const inner = PROTECTED_GIT_NAMES.find((entry) => entry.name === lower[i + 1]);
      if (inner) return { path: at(i + 2), anchor: ".git", why: inner.why };
      if (i === parts.length - 1) {
        return { path: at(i + 1), anchor: ".git", why: "it points git at another repository" };
      }
      continue;
    }
    const found = PROTECTED_PROJECT_NAMES.find((entry) => entry.name === lower[i]);
    if (found) return { path: at(i + 1), anchor: found.name, why: found.why };
  }
  if (home && isAbsolute(home)) {
    const rel = relative(resolve(home), resolve(path)).toLowerCase();
    if (rel && !rel.startsWith("..") && !isAbsolute(rel)) {
      for (const entry of PROTECTED_HOME_NAMES) {
        if (rel === entry.name || rel.startsWith(`${entry.name}${sep}`)) {
          return { path: join(home, entry.name), anchor: basename(entry.name), why: entry.why };
        }
      }
    }
  }
  return undefined;
}

/** Whether `dir` is a git directory: a `HEAD` file beside `objects` and `refs` directories. */
function _isGitDir(dir: string): boolean {
  try {
    return Deno.statSync(join(dir, "HEAD")).isFile &&
      Deno.statSync(join(dir, "objects")).isDirectory &&
      Deno.statSync(join(dir, "refs")).isDirectory;
  } catch {
    return false;
  }
}

/** How the sandbox guards the protected entries of its writable directories. */
export interface GuardPlan {
  /** Existing protected entries (real paths), bound read-only over themselves. */
  existing: string[];
  /** Absent ones, each held by a placeholder bound read-only over itself. */
  missing: Placeholder[];
  /**
   * Directories between a writable root and a protected entry (a `.git` among them), bound over
   * themselves so that they cannot be renamed: a moved parent would take the read-only mounts
   * along, and leave its name free for a copy of the command's making.
   */
  pins: string[];
}

/** What {@link guardPlan} works from. */
export interface GuardPlanOptions {
  /** The command's working directory (a real path). */
  cwd: string;
  /** The writable roots (real paths of existing directories). */
  writable: readonly string[];
  /** The home directory: its startup files are guarded when a command may write there. */
  home?: string;
  /** Hidden paths (real): nothing inside them needs guarding. */
  hidden?: readonly string[];
  /** Whether a placeholder can be made at this path (Deno lets the agent write it). */
  canMake?: (path: string) => boolean;
}

/** How deep below each writable root nested projects are looked for. */
const _SCAN_DEPTH = 3;
/** How many directories the look for nested projects reads at most, per sandbox. */
const _SCAN_BUDGET = 2_000;
/** Directories never looked into for nested projects. */
const _SCAN_SKIP = new Set(["node_modules"]);

/**
 * Works out what the sandbox guards, from the file system as it is now:
 * - in each writable root, in each directory from `cwd` up to its repository's root (while
 *   writable), and in the home directory when it is writable, every entry of
 *   {@link PROTECTED_PROJECT_NAMES} (and {@link PROTECTED_HOME_NAMES} in the home directory):
 *   existing ones as they are, absent ones by a placeholder, so that a command can create none;
 * - in each git directory met there (a `.git` directory, the one a `.git` file points to, and
 *   the common directory either names), the entries of {@link PROTECTED_GIT_NAMES}, absent ones
 *   included; a `.git` file itself;
 * - nested projects, found within three levels of each writable root (not inside hidden
 *   directories or `node_modules`, and not past a budget of directories read) and at the paths
 *   of a repository's `.gitmodules`: their existing entries, and their git directories in full.
 * Entries inside a hidden path, outside every writable root, or that are a writable root
 * themselves (the user chose to let commands write there) are left alone.
 *
 * @example
 * ```ts
 * import { guardPlan } from "./protected.ts";
 * const ws = Deno.realPathSync(Deno.makeTempDirSync());
 * Deno.mkdirSync(`${ws}/.git/hooks`, { recursive: true });
 * Deno.writeTextFileSync(`${ws}/.git/config`, "");
 * const plan = guardPlan({ cwd: ws, writable: [ws] });
 * if (!plan.existing.includes(`${ws}/.git/config`) || !plan.pins.includes(`${ws}/.git`)) {
 *   throw new Error("unexpected");
 * }
 * if (!plan.missing.some((entry) => entry.path === `${ws}/.envrc`)) throw new Error("unexpected");
 * Deno.removeSync(ws, { recursive: true });
 * ```
 */
export function guardPlan(options: GuardPlanOptions): GuardPlan {
  const writable = [...options.writable];
  const hidden = options.hidden ?? [];
  const canMake = options.canMake ?? (() => true);
  const existing = new Set<string>();
  const missing = new Map<string, Placeholder>();
  const pins = new Set<string>();
  const gitDirs = new Set<string>();
  // What each directory holds, read once: most entries looked for are absent.
  const listed = new Map<string, Set<string> | null>();
  const lstat = (path: string) => _lstatListed(listed, path);

  const rootOf = (path: string) =>
    writable.filter((root) => _within(path, root)).sort((a, b) => b.length - a.length)[0];
  const guardable = (path: string) =>
    rootOf(path) !== undefined && !writable.some((root) => _within(root, path)) &&
    !hidden.some((dir) => _within(path, dir));
  const pin = (path: string) => {
    const root = rootOf(path);
    if (!root) return;
    for (let dir = dirname(path); dir !== root && _within(dir, root); dir = dirname(dir)) {
      if (writable.includes(dir)) break;
      pins.add(dir);
    }
  };
  const guard = (path: string, entry: ProtectedName, absentToo: boolean) => {
    if (!guardable(path)) return;
    const info = lstat(path);
    const held = _placeholder(path, entry);
    // One left behind by a sandbox that could not take it away is taken over, to go this time.
    if (info && isPlaceholder(held)) {
      missing.set(path, held);
      pin(path);
      return;
    }
    if (info) {
      const real = info.isSymlink ? _real(path) : path;
      // A link cannot be held in place; what it leads to can, when a command could write it.
      if (real && guardable(real)) {
        existing.add(real);
        pin(real);
      }
      return;
    }
    if (!absentToo) return;
    // A missing parent (`.config` of `.config/git`) is held in its place, as a directory.
    let at = path;
    while (!_lstat(dirname(at)) && rootOf(dirname(at)) && dirname(at) !== rootOf(at)) {
      at = dirname(at);
    }
    if (!canMake(at)) return;
    missing.set(at, at === path ? held : { path: at, kind: "dir" });
    pin(at);
  };
  const guardGit = (dotGit: string, absentToo: boolean) => {
    if (!guardable(dotGit)) return;
    const info = lstat(dotGit);
    if (!info || isPlaceholder({ path: dotGit, kind: "dir" })) {
      if (absentToo || info) guard(dotGit, _GIT_ENTRY, true);
      return;
    }
    const submodules = lstat(join(dirname(dotGit), ".gitmodules")) !== undefined;
    const dirs: string[] = [];
    if (info.isFile) {
      existing.add(dotGit);
      pin(dotGit);
      const target = _gitFileTarget(dotGit);
      if (target) dirs.push(target);
    } else {
      const real = info.isSymlink ? _real(dotGit) : dotGit;
      if (real && lstat(real)?.isDirectory) dirs.push(real);
    }
    for (const dir of [...dirs]) {
      const common = _commonDir(dir);
      if (common) dirs.push(common);
    }
    for (const dir of dirs) {
      if (gitDirs.has(dir) || !guardable(join(dir, "config"))) continue;
      gitDirs.add(dir);
      if (!writable.includes(dir)) {
        pins.add(dir);
        pin(dir);
      }
      for (const entry of PROTECTED_GIT_NAMES) {
        const absentToo = entry.absent === "submodules" ? submodules : entry.absent !== "never";
        guard(join(dir, entry.name), entry, absentToo);
      }
    }
  };
  const guardProject = (dir: string, absentToo: boolean) => {
    for (const entry of PROTECTED_PROJECT_NAMES) {
      const path = join(dir, entry.name);
      if (entry.name === ".git") guardGit(path, absentToo);
      else guard(path, entry, absentToo);
    }
    for (const path of _submodulePaths(dir)) guardGit(join(path, ".git"), false);
  };

  const projects = new Set<string>(writable);
  for (let dir = options.cwd; rootOf(dir); dir = dirname(dir)) {
    projects.add(dir);
    if (lstat(join(dir, ".git")) || dirname(dir) === dir) break;
  }
  for (const dir of projects) guardProject(dir, true);
  const home = options.home;
  if (home && rootOf(home)) {
    for (const entry of PROTECTED_HOME_NAMES) guard(join(home, entry.name), entry, true);
  }
  _scan(writable, hidden, projects, (dir) => guardProject(dir, false));
  // What lies inside an entry bound read-only is read-only already: a mount of its own there
  // would only make it writable again (a pin) or need a placeholder for nothing.
  const held = [...existing, ...missing.keys()];
  const inside = (path: string) => held.some((outer) => outer !== path && _within(path, outer));
  return {
    existing: [...existing].filter((path) => !inside(path)),
    missing: [...missing.values()].filter((entry) => !inside(entry.path)),
    pins: [...pins].filter((path) => !existing.has(path) && !missing.has(path) && !inside(path)),
  };
}

/** Calls `visit` for each directory within {@link _SCAN_DEPTH} levels of the roots. */
function _scan(
  roots: readonly string[],
  hidden: readonly string[],
  done: ReadonlySet<string>,
  visit: (dir: string) => void,
): void {
  let budget = _SCAN_BUDGET;
  const queue: [string, number][] = roots.map((root) => [root, 0]);
  while (queue.length && budget > 0) {
    const [dir, depth] = queue.shift()!;
    budget--;
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(dir)];
    } catch {
      continue;
    }
    if (!done.has(dir) && entries.some((entry) => _projectNames.has(entry.name))) visit(dir);
    if (depth >= _SCAN_DEPTH) continue;
    for (const entry of entries) {
      if (!entry.isDirectory || entry.name.startsWith(".") || _SCAN_SKIP.has(entry.name)) continue;
      const path = join(dir, entry.name);
      if (!hidden.some((dir) => _within(path, dir))) queue.push([path, depth + 1]);
    }
  }
}

const _GIT_ENTRY = PROTECTED_PROJECT_NAMES.find((entry) => entry.name === ".git")!;

/**
 * What holds an absent entry's place: an empty directory, which git and most tools pass over (a
 * file would show in `git status`, and `git add -A` would take it), but inside a git directory a
 * file where git reads one (git dies on a `commondir` it cannot read).
 */
function _placeholder(path: string, entry: ProtectedName): Placeholder {
  if (!PROTECTED_GIT_NAMES.includes(entry) || entry.kind === "dir") return { path, kind: "dir" };
  return { path, kind: "file", ...(entry.content ? { content: entry.content } : {}) };
}

const _projectNames = new Set(PROTECTED_PROJECT_NAMES.map((entry) => entry.name));

/** The git directory a `.git` file points to (`gitdir: …`), when it is a directory. */
function _gitFileTarget(file: string): string | undefined {
  const text = readSmallTextSync(file, 4096);
  const match = text?.match(/^gitdir:\s*(.+?)\s*$/m);
  if (!match) return undefined;
  const target = _real(resolve(dirname(file), match[1]));
  return target && _lstat(target)?.isDirectory ? target : undefined;
}

/** The common directory a git directory's `commondir` names, when it is another directory. */
function _commonDir(gitDir: string): string | undefined {
  const text = readSmallTextSync(join(gitDir, "commondir"), 4096)?.trim();
  if (!text) return undefined;
  const common = _real(resolve(gitDir, text));
  return common && common !== gitDir && _lstat(common)?.isDirectory ? common : undefined;
}

/** The submodules' paths that a repository's `.gitmodules` lists (absolute). */
function _submodulePaths(dir: string): string[] {
  const text = readSmallTextSync(join(dir, ".gitmodules"), 256 * 1024);
  if (!text) return [];
  const paths: string[] = [];
  for (const match of text.matchAll(/^\s*path\s*=\s*(.+?)\s*$/gm)) {
    const path = resolve(dir, match[1].replace(/^"(.*)"$/, "$1"));
    if (_within(path, dir) && path !== dir) paths.push(path);
  }
  return paths;
}

/** {@link _lstat}, answered from the directory's listing (read once) when the entry is absent. */
function _lstatListed(
  listed: Map<string, Set<string> | null>,
  path: string,
): Deno.FileInfo | undefined {
  const dir = dirname(path);
  let names = listed.get(dir);
  if (names === undefined) {
    try {
      names = new Set(Array.from(Deno.readDirSync(dir), (entry) => entry.name));
    } catch {
      names = null;
    }
    listed.set(dir, names);
  }
  return names && !names.has(basename(path)) ? undefined : _lstat(path);
}

function _lstat(path: string): Deno.FileInfo | undefined {
  try {
    return Deno.lstatSync(path);
  } catch {
    return undefined;
  }
}

function _real(path: string): string | undefined {
  try {
    return Deno.realPathSync(path);
  } catch {
    return undefined;
  }
}

function _within(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
}
