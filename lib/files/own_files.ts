/**
 * The user's own files. A file found in a project (its settings, `.mcp.json`, `AGENTS.md`, the
 * `.git` that marks the repository) or kept for the user (the trust decisions) counts only when
 * it is the user's: the user owns it, nobody else may write it, and nobody else may put another
 * in its place — each directory above it, up to the project's, belongs to the user (or to root)
 * and nobody else may write it, unless it is sticky (as `/tmp` is: there only an entry's owner
 * renames it). These are the checks of ssh's StrictModes. A file is opened once and what is
 * checked is the open file, so that swapping it between the check and the read shows.
 *
 * @module
 */

import { dirname, isAbsolute, join, relative } from "node:path";

/** Where a file is checked up to, and where its warnings go. */
export interface OwnFileOptions {
  /** The highest directory checked above the file: the project's (its repository root). */
  upTo: string;
  /** Says why a file was found but not taken. */
  warn?: (text: string) => void;
  /** Reads at most this many bytes (default: all). */
  maxBytes?: number;
}

/**
 * Reads a file only if it is the user's own (see above); gives `undefined` when it is missing,
 * when Deno does not already let the agent read it (nobody is asked), or when it is not the
 * user's, with a warning that says why (`<path> ignored: others may write it`). A symbolic link
 * of the user's own is followed when it leads to a file within `upTo`, checked the same way.
 *
 * @example
 * ```ts
 * import { readOwnFileSync } from "./own_files.ts";
 * const dir = Deno.realPathSync(Deno.makeTempDirSync());
 * Deno.writeTextFileSync(`${dir}/notes.md`, "mine", { mode: 0o644 });
 * Deno.chmodSync(`${dir}/notes.md`, 0o644);
 * const bytes = readOwnFileSync(`${dir}/notes.md`, { upTo: dir });
 * if (new TextDecoder().decode(bytes) !== "mine") throw new Error("unexpected");
 * if (Deno.build.os !== "windows") {
 *   Deno.chmodSync(`${dir}/notes.md`, 0o666);
 *   const warnings: string[] = [];
 *   const open = readOwnFileSync(`${dir}/notes.md`, { upTo: dir, warn: (w) => warnings.push(w) });
 *   if (open !== undefined || !warnings[0].endsWith("ignored: others may write it")) {
 *     throw new Error(warnings.join());
 *   }
 * }
 * ```
 */
export function readOwnFileSync(path: string, options: OwnFileOptions): Uint8Array | undefined {
  if (!_granted(path)) return undefined;
  let before: Deno.FileInfo;
  try {
    before = Deno.lstatSync(path);
  } catch {
    return undefined;
  }
  const uid = userId();
  const refuse = (why: string) => {
    options.warn?.(`${path} ignored: ${why}`);
    return undefined;
  };
  const where = unsafeDirectory(dirname(path), options.upTo, uid);
  if (where) return refuse(where);
  let target = path;
  if (before.isSymlink && Deno.build.os !== "windows") {
    const why = _ownerProblem(before, uid);
    if (why) return refuse(why);
    let upTo: string;
    if (!_granted(options.upTo)) return undefined;
    try {
      target = Deno.realPathSync(path);
      upTo = Deno.realPathSync(options.upTo);
      if (!_granted(target)) return undefined;
      before = Deno.lstatSync(target);
    } catch {
      return undefined;
    }
    const inside = relative(upTo, target);
    if (inside === "" || inside.startsWith("..") || isAbsolute(inside)) {
      return refuse(`it is a symbolic link out of ${options.upTo}`);
    }
    const there = unsafeDirectory(dirname(target), upTo, uid);
    if (there) return refuse(there);
  }
  const why = _fileProblem(before, uid);
  if (why) return refuse(why);
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(target, { read: true });
  } catch {
    return undefined;
  }
  try {
    const info = file.statSync();
    // What was opened is what was checked: another file put in its place since shows here.
    if (info.dev !== before.dev || info.ino !== before.ino) {
      return refuse("it was replaced while it was read");
    }
    const now = _fileProblem(info, uid);
    if (now) return refuse(now);
    return _readAll(file, options.maxBytes ?? Infinity);
  } catch {
    return undefined;
  } finally {
    file.close();
  }
}

/**
 * The repository root: the nearest directory at or above `cwd` holding a `.git` of the user's
 * own, if Deno lets the agent look (never asking). A `.git` another user owns, or that others may
 * write, marks nothing: the search goes on above it, and `warn` says so.
 *
 * @example
 * ```ts
 * import { repositoryRoot } from "./own_files.ts";
 * const dir = Deno.realPathSync(Deno.makeTempDirSync());
 * Deno.mkdirSync(`${dir}/.git`);
 * Deno.mkdirSync(`${dir}/src`);
 * if (repositoryRoot(`${dir}/src`) !== dir) throw new Error("unexpected");
 * ```
 */
export function repositoryRoot(
  cwd: string,
  warn?: (text: string) => void,
): string | undefined {
  const uid = userId();
  for (let dir = cwd;; dir = dirname(dir)) {
    if (!_granted(dir)) return undefined;
    const marker = join(dir, ".git");
    try {
      const info = Deno.lstatSync(marker);
      const why = _ownerProblem(info, uid) ?? (info.isSymlink ? undefined : _modeProblem(info));
      if (!why) return dir;
      warn?.(`${marker} ignored: ${why}`);
    } catch {
      // Not here: look higher.
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * Why another user could put something in place of what is in `from`: the first directory from
 * `from` up to `upTo` that belongs to another user (root aside) or that others may write (unless
 * it is sticky); `undefined` when there is none. Directories that do not exist, or that Deno does
 * not already let the agent read, are passed over.
 *
 * @example
 * ```ts
 * import { unsafeDirectory } from "./own_files.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.mkdirSync(`${dir}/shared`);
 * if (Deno.build.os !== "windows") {
 *   Deno.chmodSync(`${dir}/shared`, 0o777);
 *   const why = unsafeDirectory(`${dir}/shared`, dir);
 *   if (why !== `others may write the directory ${dir}/shared`) throw new Error(why);
 * }
 * ```
 */
export function unsafeDirectory(
  from: string,
  upTo: string,
  uid: number | undefined = userId(),
): string | undefined {
  if (Deno.build.os === "windows") return undefined;
  for (let dir = from;; dir = dirname(dir)) {
    let info: Deno.FileInfo | undefined;
    try {
      if (_granted(dir)) info = Deno.statSync(dir);
    } catch {
      // Not there yet: nobody else's.
    }
    if (info && uid !== undefined && info.uid !== null && info.uid !== uid && info.uid !== 0) {
      return `the directory ${dir} belongs to another user (uid ${info.uid})`;
    }
    // In a sticky directory only an entry's owner may rename or remove it.
    const sticky = ((info?.mode ?? 0) & 0o1000) !== 0;
    if (info && !sticky && _openToOthers(info)) {
      return `others may write the directory ${dir}`;
    }
    if (dir === upTo || dirname(dir) === dir) return undefined;
  }
}

/**
 * The user's id, when Deno grants asking for it (or reading HOME, which the user owns);
 * `undefined` when it cannot be known, and then only modes are checked.
 *
 * @example
 * ```ts
 * import { userId } from "./own_files.ts";
 * const uid = userId();
 * if (uid !== undefined && typeof uid !== "number") throw new Error("unexpected");
 * ```
 */
export function userId(): number | undefined {
  return _ids().uid;
}

/** The user's ids, found once: from Deno when it grants asking, else from HOME, the user's own. */
let _known: { uid?: number; gid?: number } | undefined;
function _ids(): { uid?: number; gid?: number } {
  if (_known) return _known;
  const ids: { uid?: number; gid?: number } = {};
  try {
    const sys = (kind: "uid" | "gid") =>
      Deno.permissions.querySync({ name: "sys", kind }).state === "granted";
    if (sys("uid")) ids.uid = Deno.uid() ?? undefined;
    if (sys("gid")) ids.gid = Deno.gid() ?? undefined;
    if (ids.uid === undefined || ids.gid === undefined) {
      const home = Deno.permissions.querySync({ name: "env", variable: "HOME" }).state === "granted"
        ? Deno.env.get("HOME")
        : undefined;
      if (home && _granted(home)) {
        const info = Deno.statSync(home);
        ids.uid ??= info.uid ?? undefined;
        ids.gid ??= info.gid ?? undefined;
      }
    }
  } catch {
    // Unknown: only modes are checked, and a group that may write counts as others.
  }
  return _known = ids;
}

/** Why a file is not to be taken as the user's: a link, not a file, another's, or open to others. */
function _fileProblem(info: Deno.FileInfo, uid: number | undefined): string | undefined {
  if (info.isSymlink) return "it is a symbolic link";
  if (!info.isFile) return "it is not a file";
  return _ownerProblem(info, uid) ?? _modeProblem(info);
}

function _ownerProblem(info: Deno.FileInfo, uid: number | undefined): string | undefined {
  if (uid !== undefined && info.uid !== null && info.uid !== uid) {
    return `it belongs to another user (uid ${info.uid})`;
  }
  return undefined;
}

function _modeProblem(info: Deno.FileInfo): string | undefined {
  return _openToOthers(info) ? "others may write it" : undefined;
}

/**
 * Whether users other than the owner may write: others may, or a group other than the user's
 * own (with a user-private group and umask 002, as many systems set up, the group is the user's
 * alone).
 */
function _openToOthers(info: Deno.FileInfo): boolean {
  const mode = info.mode;
  if (mode === null) return false;
  if ((mode & 0o002) !== 0) return true;
  if ((mode & 0o020) === 0) return false;
  const own = userGroupId();
  return own === undefined || info.gid === null || info.gid !== own;
}

/**
 * The user's own group id, when Deno grants asking for it (or reading HOME, whose group is the
 * user's); `undefined` when it cannot be known.
 *
 * @example
 * ```ts
 * import { userGroupId } from "./own_files.ts";
 * const gid = userGroupId();
 * if (gid !== undefined && typeof gid !== "number") throw new Error("unexpected");
 * ```
 */
export function userGroupId(): number | undefined {
  return _ids().gid;
}

/** Whether Deno already lets the agent read `path` (never asking the user). */
function _granted(path: string): boolean {
  return Deno.permissions.querySync({ name: "read", path }).state === "granted";
}

function _readAll(file: Deno.FsFile, maxBytes: number): Uint8Array {
  const chunks: Uint8Array[] = [];
  let total = 0;
  while (total < maxBytes) {
    const chunk = new Uint8Array(Math.min(64 * 1024, maxBytes - total));
    const read = file.readSync(chunk);
    if (read === null) break;
    chunks.push(chunk.subarray(0, read));
    total += read;
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}
