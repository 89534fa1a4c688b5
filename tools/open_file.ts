/**
 * Opening a file once, and checking what was opened: the file tools' defence against a path
 * that changes between the check and the open. A command running at the same time (the
 * sandboxed `bash`) can swap a directory of the workspace for a symlink to `$HOME` and back,
 * thousands of times a second; a tool that resolved the path, checked it, then opened it again by
 * name would write to wherever the name led at that later moment.
 *
 * So {@link openFileOnce} never acts on a path by name after checking it. It holds the parent
 * directory first and takes its real path from what it holds; checks the file's real path in it
 * (the caller's `check`: inside the workspace, allowed by the rules); and only then opens the one
 * last name inside that directory, without following a symlink (`O_NOFOLLOW`) and without
 * truncating it. A file that does not exist is created there (`O_CREAT | O_EXCL`), and missing
 * directories on its way one by one, each held before the next; nothing is ever created,
 * truncated or written outside what was checked, not even for a moment. Reads and writes then go
 * through that one descriptor.
 *
 * How a directory is held depends on what Deno grants:
 * - with every permission (`--allow-all`): it is opened (`O_DIRECTORY`) and named by the kernel
 *   through its `/proc/self/fd/N` link, and the file is opened through that link (an `openat`).
 *   Whatever changes the path afterwards, the kernel names the directory actually held, so this
 *   holds against any process running at the same time. Deno gives these links only to a process
 *   with every permission.
 * - otherwise Deno offers no way to open a file relative to a directory held (it turns every
 *   relative path into an absolute one and looks it up by name), so the path is resolved, checked
 *   and opened in one synchronous step taken only while no sandboxed process that may write is
 *   alive (see `lib/sandbox/running.ts`): nothing that could swap a directory runs between the
 *   check and the open. A call waits for the sandboxed commands and hooks running at the same
 *   time to end (the sandbox leaves nothing of them behind), and is refused while a sandboxed MCP
 *   server that may write runs, since that lasts. Processes outside the sandbox are the user's
 *   own: an unsandboxed command could write anywhere anyway.
 *
 * Two limits are the file system's own: a hard link is the same file under two names (the
 * sandbox cannot make one to a file outside: links across mounts fail), and a file renamed after
 * it was opened is still the file that was checked.
 *
 * @module
 */

import nodeFs from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { liveSandboxes, nextSandboxEnd } from "../lib/sandbox/running.ts";
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
 * Opens the file at the absolute `path` once, as the module doc describes: `check` sees the real
 * path of the file inside the directory actually held, before it is opened or created, and
 * refuses by throwing. A symlink in the last place is followed from the directory held, and what it leads to
 * is held in turn. {@link PathChangedError} says the path changed under it (a symlink that is
 * gone when read, a directory just made that is not what was made): opening it again may succeed. Errors of the file system keep their `code` (`ENOENT`, `EISDIR`, …);
 * a FIFO never blocks (`O_NONBLOCK`). Without every permission it may first wait for sandboxed
 * processes to end (until `signal` aborts).
 *
 * @example
 * ```ts
 * import { openFileOnce } from "./open_file.ts";
 * const dir = Deno.realPathSync(Deno.makeTempDirSync());
 * let checked = "";
 * {
 *   using file = await openFileOnce(`${dir}/new/a.txt`, {
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
export async function openFileOnce(path: string, options: ToolOpenOptions = {}): Promise<ToolFile> {
  const name = basename(path);
  if (!name || name === "." || name === "..") throw new Error(`${path} does not name a file`);
  while (true) {
    _viaProc ??= _procGranted();
    if (_viaProc) {
      const opened: number[] = [];
      try {
        return _open(path, options, (dir) => _procDir(dir, opened));
      } catch (error) {
        if (!(error instanceof _ProcDenied)) throw error;
        _viaProc = false; // revoked since it was asked: nothing was done yet
      } finally {
        for (const fd of opened) nodeFs.closeSync(fd);
      }
    }
    // Checked and opened in the same synchronous step: nothing can start in between.
    const live = liveSandboxes();
    if (live.length === 0) return _open(path, options, _namedDir);
    const server = live.find((sandbox) => sandbox.kind === "server");
    if (server) {
      throw new Error(
        `${path} was not opened: the MCP server "${server.name}" runs in the sandbox and may ` +
          `change the workspace at any moment, and only with every permission can the agent ` +
          `check the file it opened rather than its name. Run the agent with --allow-all, or ` +
          `without that server.`,
      );
    }
    await nextSandboxEnd(options.signal);
  }
}

/** How many symlinks a path may lead through, as the kernel allows. */
const _MAX_LINKS = 40;

/** Opens `path` with `hold`, as {@link openFileOnce} says. */
function _open(path: string, options: ToolOpenOptions, hold: _Hold): ToolFile {
  const { access = "read", create = false, check } = options;
  const flags = (access === "read" ? O_RDONLY : access === "write" ? O_WRONLY : O_RDWR) |
    O_NOFOLLOW | O_NONBLOCK;
  let target = path;
  for (let links = 0;; links++) {
    if (links > _MAX_LINKS) {
      throw Object.assign(new Error(`${path} leads through too many symlinks`), { code: "ELOOP" });
    }
    const name = basename(target);
    const missing: string[] = [];
    let dir = _deepest(hold, dirname(target), create ? missing : undefined);
    const real = join(dir.real, ...missing, name);
    // The name's place is held: what is opened or made there is what was checked.
    check?.(real);
    if (missing.length === 0) {
      try {
        return _file(dir.open(name, flags), real, false);
      } catch (error) {
        if (_code(error) === "ELOOP") {
          // A symlink: followed from the directory held, and what it leads to held in turn.
          target = resolve(dir.real, dir.readLink(name));
          continue;
        }
        if (_code(error) !== "ENOENT" || !create) throw error;
      }
    }
    for (const part of missing) dir = _makeDir(dir, part);
    try {
      return _file(dir.open(name, flags | O_CREAT | O_EXCL, 0o666), real, true);
    } catch (error) {
      // Made in between (by someone else, or a symlink put there): look again.
      if (_code(error) !== "EEXIST") throw error;
    }
  }
}

/** A directory held, with its real path. */
interface _Dir {
  /** Its real path. */
  readonly real: string;
  /** Opens `name` inside it. */
  open(name: string, flags: number, mode?: number): number;
  /** Makes the directory `name` inside it. */
  mkdir(name: string): void;
  /** Holds the directory `name` inside it (a symlink is not followed). */
  enter(name: string): _Dir;
  /** Where the symlink `name` inside it points; {@link PathChangedError} when it is none. */
  readLink(name: string): string;
}

/** Holds a directory by its path (symlinks on the way followed). */
type _Hold = (path: string) => _Dir;

/** Whether `/proc/self/fd` links may be used: undefined until first asked. */
let _viaProc: boolean | undefined;

/** Whether Deno gives this process `/proc/self/fd` links: only with every permission. */
function _procGranted(): boolean {
  // Asked first without a prompt: a partial grant never gets them.
  for (const name of ["read", "write", "run"] as const) {
    if (Deno.permissions.querySync({ name }).state !== "granted") return false;
  }
  try {
    Deno.readLinkSync("/proc/self/cwd");
    return true;
  } catch {
    return false;
  }
}

/** Deno refused a `/proc/self/fd` link: its permissions were revoked since they were asked. */
class _ProcDenied extends Error {}

/** Holds the directory `path` open, named by its `/proc/self/fd` link. */
function _procDir(path: string, opened: number[]): _Dir {
  return _procHeld(nodeFs.openSync(path, O_RDONLY | O_DIRECTORY), opened);
}

function _procHeld(fd: number, opened: number[]): _Dir {
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
    mkdir: (name) => Deno.mkdirSync(at(name)),
    enter: (name) =>
      _procHeld(nodeFs.openSync(at(name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW), opened),
    readLink: (name) => _readLink(at(name), join(real, name)),
  };
}

/**
 * Holds the directory `path` by its real name: sound only while nothing that could change it
 * runs, which the caller makes sure of.
 */
function _namedDir(path: string): _Dir {
  // Not a directory: opening a name inside it says so (ENOTDIR).
  const real = Deno.realPathSync(path);
  return {
    real,
    open: (name, flags, mode) => nodeFs.openSync(join(real, name), flags, mode),
    mkdir: (name) => Deno.mkdirSync(join(real, name)),
    enter(name) {
      const inside = join(real, name);
      if (Deno.lstatSync(inside).isSymlink) throw new PathChangedError(inside);
      return _namedDir(inside);
    },
    readLink: (name) => _readLink(join(real, name), join(real, name)),
  };
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

/** The target of the symlink at `path` (known as `shown`); {@link PathChangedError} if none. */
function _readLink(path: string, shown: string): string {
  try {
    return Deno.readLinkSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotCapable) throw error;
    throw new PathChangedError(shown);
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
    // Written over from the start, then cut to its length: a file replaced by one of about its
    // size keeps its blocks (truncating to 0 first frees them all, and costs 7 times as much).
    write: (data) =>
      _now(() => {
        for (let done = 0; done < data.length;) {
          done += nodeFs.writeSync(fd, data, done, data.length - done, done);
        }
        nodeFs.ftruncateSync(fd, data.length);
      }),
    [Symbol.dispose]() {
      if (open) nodeFs.closeSync(fd);
      open = false;
    },
  };
}

/**
 * The most read of a file whose size says nothing (files of `/proc` say 0, yet
 * `/proc/self/pagemap` holds gigabytes): past it the read is refused rather than the agent
 * frozen and its memory filled.
 */
const _MAX_UNSIZED = 16 * 1024 * 1024;

/** Everything from the start of `fd`; `size` is a guess (files of `/proc` say 0). */
function _readAll(fd: number, size: number): Uint8Array {
  let bytes = new Uint8Array(size > 0 ? size : 64 * 1024);
  let length = 0;
  while (true) {
    if (length >= Math.max(size, _MAX_UNSIZED)) {
      throw new Error(
        `The file holds more than its size says (over ${_MAX_UNSIZED / 1024 / 1024} MiB read): ` +
          `a file of /proc or a device is not read whole; read a smaller file, or search it`,
      );
    }
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

/** A synchronous call's outcome as a promise: its value, or its error as a rejection. */
function _now<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (error) {
    return Promise.reject(error);
  }
}
