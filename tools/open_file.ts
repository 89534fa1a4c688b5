/**
 * Opening a file once, and checking what was opened: the file tools' defence against a path
 * that changes between the check and the open. A command running at the same time (the
 * sandboxed `bash`) can swap a directory of the workspace for a symlink to `$HOME` and back,
 * thousands of times a second; a tool that resolved the path, checked it, then opened it again by
 * name would write to wherever the name led at that later moment.
 *
 * So {@link openFileOnce} never acts on a path by name after checking it. It holds the parent
 * directory first and asks the kernel for that directory's real path, which no later rename or
 * swap changes; checks the file's real path in it (the caller's `check`: inside the workspace,
 * allowed by the rules); and only then opens the one last name inside that directory, without
 * following a symlink (`O_NOFOLLOW`) and without truncating it. A file that does not exist is
 * created there (`O_CREAT | O_EXCL`), and missing directories on its way one by one, each held
 * and checked before the next; nothing is ever created, truncated or written outside what was
 * checked, not even for a moment. Reads and writes then go through that one descriptor.
 *
 * The directory is held in one of two ways, whichever Deno grants:
 * - under `--allow-all`: opened (`O_DIRECTORY`), named by its `/proc/self/fd/N` link, and the
 *   file opened through that link (an `openat`); Deno gives these `/proc` links only to a process
 *   with every permission;
 * - otherwise: entered as the process's working directory (`chdir`), named by `getcwd`, and the
 *   file opened by its bare name, relative to it; Deno checks its grant on that real path. The
 *   whole sequence is synchronous, so no other JavaScript of the process runs while the working
 *   directory is borrowed, and it is given back before returning (when Deno does not let the
 *   process read its own working directory, which it then cannot use by name either, the process
 *   stays in the last directory held). Code running in other threads (workers) must not use
 *   relative paths meanwhile: the agent's own do not.
 *
 * Either way what the kernel names is the directory actually held, however its path changed
 * before; a sandboxed command can only rename it within the writable roots, never move it out.
 * Two limits are the file system's own: a hard link is the same file under two names (the sandbox
 * cannot make one to a file outside: links across mounts fail), and a file renamed after it was
 * opened is still the file that was checked.
 *
 * @module
 */

import nodeFs from "node:fs";
import { basename, dirname, join } from "node:path";
import type { ToolFile, ToolFileInfo, ToolOpenOptions } from "./fs.ts";

const {
  O_RDONLY,
  O_WRONLY,
  O_RDWR,
  O_CREAT,
  O_EXCL,
  O_NOFOLLOW,
  O_NONBLOCK,
  O_DIRECTORY,
} = nodeFs.constants;

/**
 * Thrown by {@link openFileOnce} when what lies at the path changed while it was being opened (a
 * symlink took the file's place, a directory on its way was swapped): resolving the path again
 * may succeed. Nothing was created or changed.
 *
 * @example
 * ```ts
 * import { PathChangedError } from "./open_file.ts";
 * const error = new PathChangedError("/w/a.txt");
 * if (error.name !== "PathChangedError" || error.path !== "/w/a.txt") throw new Error("unexpected");
 * ```
 */
export class PathChangedError extends Error {
  /** The path that changed. */
  readonly path: string;
  /** @param path The path that changed. */
  constructor(path: string) {
    super(`${path} changed while it was being opened`);
    this.name = "PathChangedError";
    this.path = path;
  }
}

/**
 * Opens the file at `path` (absolute, its directories' symlinks already resolved) once, as the
 * module doc describes: `check` sees the real path of the file inside the directory actually
 * held, before anything is created or opened, and refuses by throwing. A final symlink is not
 * followed: it throws {@link PathChangedError}, as does a directory on the way that turns out not
 * to be where the path said. Errors of the file system keep their `code` (`ENOENT`, `EISDIR`, …);
 * a FIFO never blocks (`O_NONBLOCK`).
 *
 * @example
 * ```ts
 * import { openFileOnce } from "./open_file.ts";
 * const dir = Deno.realPathSync(Deno.makeTempDirSync());
 * let checked = "";
 * {
 *   using file = openFileOnce(`${dir}/new/a.txt`, {
 *     access: "write",
 *     create: true,
 *     check: (path) => checked = path,
 *   });
 *   await file.write(new TextEncoder().encode("hi"));
 * }
 * if (checked !== `${dir}/new/a.txt` || Deno.readTextFileSync(checked) !== "hi") {
 *   throw new Error("unexpected");
 * }
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function openFileOnce(path: string, options: ToolOpenOptions = {}): ToolFile {
  const { access = "read", create = false, check } = options;
  const name = basename(path);
  if (!name || name === "." || name === "..") throw new Error(`${path} does not name a file`);
  return _holding((hold) => {
    const missing: string[] = [];
    let dir = _deepest(hold, dirname(path), create ? missing : undefined);
    const real = join(dir.real, ...missing, name);
    check?.(real);
    for (const part of missing) dir = _makeDir(dir, part);
    const flags = (access === "read" ? O_RDONLY : access === "write" ? O_WRONLY : O_RDWR) |
      O_NOFOLLOW | O_NONBLOCK;
    for (let attempt = 0;; attempt++) {
      try {
        return _file(dir.open(name, flags), real, false);
      } catch (error) {
        if (_code(error) === "ELOOP") throw new PathChangedError(path);
        if (_code(error) !== "ENOENT" || !create || attempt > 0) throw error;
      }
      try {
        return _file(dir.open(name, flags | O_CREAT | O_EXCL, 0o666), real, true);
      } catch (error) {
        // Made by someone else in between: open what is there now, in the same directory.
        if (_code(error) !== "EEXIST") throw error;
      }
    }
  });
}

/** A directory held open or entered, as the kernel names it. */
interface _Dir {
  /** Its real path, from the kernel. */
  readonly real: string;
  /** Opens `name` inside it. */
  open(name: string, flags: number, mode?: number): number;
  /** Makes the directory `name` inside it. */
  mkdir(name: string): void;
  /** Holds the directory `name` inside it (a symlink is not followed). */
  enter(name: string): _Dir;
}

/** Holds a directory by its path (symlinks on the way followed). */
type _Hold = (path: string) => _Dir;

/** Whether `/proc/self/fd` links may be used: undefined until first asked. */
let _viaProc: boolean | undefined;

/** Runs `work` with a way to hold directories: `/proc` links where Deno allows, else the cwd. */
function _holding<T>(work: (hold: _Hold) => T): T {
  _viaProc ??= _procGranted();
  if (_viaProc) {
    const opened: number[] = [];
    try {
      return work((path) => _procDir(nodeFs.openSync(path, O_RDONLY | O_DIRECTORY), opened));
    } catch (error) {
      if (!(error instanceof _ProcDenied)) {
        // Permissions revoked since: ask again next time.
        if (error instanceof Deno.errors.NotCapable) _viaProc = undefined;
        throw error;
      }
      _viaProc = false; // nothing was done yet: the first link was refused
    } finally {
      for (const fd of opened) nodeFs.closeSync(fd);
    }
  }
  const home = _cwd();
  try {
    return work(_cwdDir);
  } finally {
    // When it cannot be given back (gone since), the process stays where it is.
    if (home !== undefined) _try(() => Deno.chdir(home));
  }
}

/** Deno refused a `/proc/self/fd` link: its permissions were revoked since they were asked. */
class _ProcDenied extends Error {}

/** Whether Deno gives this process `/proc/self/fd` links: only with every permission. */
function _procGranted(): boolean {
  // Asked first without a prompt: a partial grant never gets them.
  for (const name of ["read", "write"] as const) {
    if (Deno.permissions.querySync({ name }).state !== "granted") return false;
  }
  try {
    Deno.readLinkSync("/proc/self/cwd");
    return true;
  } catch {
    return false;
  }
}

function _procDir(fd: number, opened: number[]): _Dir {
  opened.push(fd);
  const at = (name: string) => `/proc/self/fd/${fd}/${name}`;
  let real: string;
  try {
    real = Deno.readLinkSync(`/proc/self/fd/${fd}`);
  } catch (error) {
    if (error instanceof Deno.errors.NotCapable) throw new _ProcDenied();
    throw error;
  }
  return {
    real,
    open: (name, flags, mode) => nodeFs.openSync(at(name), flags, mode),
    mkdir: (name) => nodeFs.mkdirSync(at(name)),
    enter: (name) =>
      _procDir(nodeFs.openSync(at(name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW), opened),
  };
}

function _cwdDir(path: string): _Dir {
  Deno.chdir(path);
  let real: string;
  try {
    real = Deno.cwd();
  } catch (error) {
    // Not granted where the kernel took us: not where the path said (its grant was checked).
    if (error instanceof Deno.errors.NotCapable) throw new PathChangedError(path);
    throw error;
  }
  return {
    real,
    open: (name, flags, mode) => nodeFs.openSync(name, flags, mode),
    mkdir: (name) => nodeFs.mkdirSync(name),
    enter(name) {
      const entered = _cwdDir(name);
      if (entered.real !== join(real, name)) throw new PathChangedError(join(real, name));
      return entered;
    },
  };
}

/** The process's working directory, or undefined when Deno does not let it read it. */
function _cwd(): string | undefined {
  try {
    return Deno.cwd();
  } catch (error) {
    if (error instanceof Deno.errors.NotCapable) return undefined;
    throw error;
  }
}

/**
 * Holds `path`; with `missing`, the deepest ancestor that exists instead, and puts the names
 * below it into `missing`.
 */
function _deepest(hold: _Hold, path: string, missing?: string[]): _Dir {
  for (let current = path;; current = dirname(current)) {
    try {
      return hold(current);
    } catch (error) {
      if (!missing || _code(error) !== "ENOENT" || dirname(current) === current) throw error;
      missing.unshift(basename(current));
    }
  }
}

/** Makes the directory `name` in `dir` (or finds it made) and holds it. */
function _makeDir(dir: _Dir, name: string): _Dir {
  try {
    dir.mkdir(name);
  } catch (error) {
    if (_code(error) !== "EEXIST") throw error;
  }
  try {
    return dir.enter(name);
  } catch (error) {
    if (_code(error) === "ELOOP") throw new PathChangedError(join(dir.real, name));
    throw error;
  }
}

/** The node-style code of an error (`ENOENT`, …), if any. */
function _code(error: unknown): string | undefined {
  if (error instanceof Deno.errors.NotFound) return "ENOENT";
  return (error as { code?: string } | undefined)?.code;
}

/** What was opened: reads and writes go through `fd`, closed on dispose. */
function _file(fd: number, path: string, created: boolean): ToolFile {
  let stat: nodeFs.Stats;
  try {
    stat = nodeFs.fstatSync(fd);
  } catch (error) {
    nodeFs.closeSync(fd);
    throw error;
  }
  const info: ToolFileInfo = {
    isFile: stat.isFile(),
    isDirectory: stat.isDirectory(),
    isSymlink: false,
    size: stat.size,
    mtime: stat.mtime ?? null,
  };
  let open = true;
  return {
    path,
    created,
    info,
    read: () => _now(() => _readAll(fd, info.size)),
    write: (data) =>
      _now(() => {
        nodeFs.ftruncateSync(fd, 0);
        for (let done = 0; done < data.length;) {
          done += nodeFs.writeSync(fd, data, done, data.length - done, done);
        }
      }),
    [Symbol.dispose]() {
      if (open) nodeFs.closeSync(fd);
      open = false;
    },
  };
}

/** Everything from the start of `fd`; `size` is a guess (files of `/proc` say 0). */
function _readAll(fd: number, size: number): Uint8Array {
  let bytes = new Uint8Array(size > 0 ? size : 64 * 1024);
  let length = 0;
  while (true) {
    if (length === bytes.length) {
      const grown = new Uint8Array(bytes.length * 2);
      grown.set(bytes);
      bytes = grown;
    }
    const n = nodeFs.readSync(fd, bytes, length, bytes.length - length, length);
    if (n === 0) return bytes.subarray(0, length);
    length += n;
  }
}

function _try(work: () => void): void {
  try {
    work();
  } catch {
    // best effort
  }
}

/** A synchronous call's outcome as a promise: its value, or its error as a rejection. */
function _now<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (error) {
    return Promise.reject(error);
  }
}
