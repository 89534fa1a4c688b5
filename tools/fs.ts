/**
 * The file system the built-in tools use: Deno's by default, swappable in tests. The tools that
 * read or change one file open it once through {@link openFile}, which checks the file it opened
 * (see `open_file.ts` for how Deno's is opened without a race).
 *
 * @module
 */

import { basename, dirname, resolve } from "node:path";
import { openFileOnce } from "./open_file.ts";

/** What the tools need to know about a file. */
export interface ToolFileInfo {
  /** A regular file. */
  isFile: boolean;
  /** A directory. */
  isDirectory: boolean;
  /** A symbolic link (only from `lstat`). */
  isSymlink: boolean;
  /** Size in bytes. */
  size: number;
  /** Last modification, when known. */
  mtime: Date | null;
}

/** An entry of a directory listing. */
export interface ToolDirEntry {
  /** The entry's name. */
  name: string;
  /** A regular file. */
  isFile: boolean;
  /** A directory. */
  isDirectory: boolean;
  /** A symbolic link. */
  isSymlink: boolean;
}

/** How {@link ToolFs.open} opens a file. */
export interface ToolOpenOptions {
  /**
   * What the caller does with it: `read` it (the default), `write` it whole, or `update` it
   * (read, then write).
   */
  access?: "read" | "write" | "update";
  /** Creates the file, and its missing parent directories, when it does not exist. */
  create?: boolean;
  /**
   * Checks the real path of the file about to be opened or created, as the file system names it
   * at that moment, before anything is created or changed; throws to refuse.
   */
  check?: (path: string) => void;
  /** Stops a wait before the file is opened (see `open_file.ts`). */
  signal?: AbortSignal;
}

/** A file opened once: every read and write goes to the file that was checked. */
export interface ToolFile extends Disposable {
  /** Its real path when it was opened. */
  readonly path: string;
  /** Whether opening it created it. */
  readonly created: boolean;
  /** What it was when it was opened. */
  readonly info: ToolFileInfo;
  /** Its whole content. */
  read(): Promise<Uint8Array>;
  /** Replaces its whole content. */
  write(data: Uint8Array): Promise<void>;
}

/** The file operations of the built-in tools. Paths are absolute. */
export interface ToolFs {
  /** Reads a whole file. */
  readFile(path: string): Promise<Uint8Array>;
  /** Writes a whole file, creating or replacing it. */
  writeFile(path: string, data: Uint8Array): Promise<void>;
  /** Information about a path, following symlinks. */
  stat(path: string): Promise<ToolFileInfo>;
  /** Information about a path itself, not following a final symlink. */
  lstat(path: string): Promise<ToolFileInfo>;
  /** The canonical path: absolute, with `..` and symlinks resolved. Throws when it does not exist. */
  realPath(path: string): Promise<string>;
  /** The entries of a directory. */
  readDir(path: string): AsyncIterable<ToolDirEntry>;
  /** Creates a directory (and its parents with `recursive`). */
  mkdir(path: string, options?: { recursive?: boolean }): Promise<void>;
  /**
   * Opens the file at `path` (absolute, its directories' symlinks resolved) once, calling
   * `options.check` with what it is about to open, and refusing a final symlink. Optional: a file
   * system without it (one in memory, where nothing changes behind the tool's back) is opened
   * through the other methods; see {@link openFile}.
   */
  open?(path: string, options?: ToolOpenOptions): Promise<ToolFile>;
}

/** Files up to this size are read without leaving the calling thread. */
const _SMALL_FILE = 256 * 1024;

/**
 * Deno's file system.
 *
 * @example
 * ```ts
 * import { denoFs } from "./fs.ts";
 * const info = await denoFs.stat(Deno.cwd());
 * if (!info.isDirectory) throw new Error("unexpected");
 * ```
 */
export const denoFs: ToolFs = {
  // Looking a path up is a quick system call: made synchronously it costs a few µs, where a
  // trip through the I/O threads costs ~80. Small regular files are read the same way; large
  // ones, empty-looking ones (/proc, devices) and anything else go through the threads.
  async readFile(path) {
    const info = Deno.statSync(path);
    return info.isFile && info.size > 0 && info.size <= _SMALL_FILE
      ? Deno.readFileSync(path)
      : await Deno.readFile(path);
  },
  writeFile: (path, data) => Deno.writeFile(path, data),
  stat: (path) => _now(() => Deno.statSync(path)),
  lstat: (path) => _now(() => Deno.lstatSync(path)),
  realPath: (path) => _now(() => Deno.realPathSync(path)),
  readDir: (path) => Deno.readDir(path),
  mkdir: (path, options) => Deno.mkdir(path, options),
  open: openFileOnce,
};

/**
 * Opens a file of `fs` once (see {@link ToolFs.open}); a file system without `open` is opened
 * through its other methods: `check` sees the path, reads and writes go to it by name.
 *
 * @example
 * ```ts
 * import { memoryFs } from "../lib/testing/mod.ts";
 * import { openFile } from "./fs.ts";
 * const fs = memoryFs();
 * fs.put("/w/a.txt", "hi");
 * using file = await openFile(fs, "/w/a.txt", { access: "update" });
 * await file.write(new TextEncoder().encode(new TextDecoder().decode(await file.read()) + "!"));
 * if (fs.text("/w/a.txt") !== "hi!") throw new Error("unexpected");
 * ```
 */
export async function openFile(
  fs: ToolFs,
  path: string,
  options: ToolOpenOptions = {},
): Promise<ToolFile> {
  if (fs.open) return await fs.open(path, options);
  path = await realPathOf(fs, "/", path);
  let info: ToolFileInfo | undefined;
  try {
    info = await fs.stat(path);
  } catch (error) {
    if (!isNotFound(error) || !options.create) throw error;
  }
  options.check?.(path);
  if (info?.isDirectory && options.access && options.access !== "read") {
    throw Object.assign(new Error(`${path} is a directory`), { code: "EISDIR" });
  }
  const created = info === undefined;
  if (created) {
    await fs.mkdir(dirname(path), { recursive: true });
    await fs.writeFile(path, new Uint8Array());
  }
  return {
    path,
    created,
    info: info ?? { isFile: true, isDirectory: false, isSymlink: false, size: 0, mtime: null },
    read: () => fs.readFile(path),
    write: (data) => fs.writeFile(path, data),
    [Symbol.dispose]() {},
  };
}

/** A synchronous call's outcome as a promise: its value, or its error as a rejection. */
function _now<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * The real absolute path of `path` (relative to `cwd`): symlinks and `..` resolved. For a path
 * that does not exist yet, its nearest existing ancestor is resolved and the rest appended.
 *
 * @example
 * ```ts
 * import { denoFs } from "./fs.ts";
 * import { realPathOf } from "./fs.ts";
 * const path = await realPathOf(denoFs, Deno.cwd(), "no/such/file.txt");
 * if (!path.endsWith("no/such/file.txt")) throw new Error("unexpected");
 * ```
 */
export async function realPathOf(fs: ToolFs, cwd: string, path: string): Promise<string> {
  const absolute = resolve(cwd, path);
  const missing: string[] = [];
  let current = absolute;
  while (true) {
    try {
      const real = await fs.realPath(current);
      return missing.length ? resolve(real, ...missing.reverse()) : real;
    } catch (error) {
      const parent = dirname(current);
      if (!isNotFound(error) || parent === current) throw error;
      missing.push(basename(current));
      current = parent;
    }
  }
}

/**
 * Whether an error says the path does not exist, from Deno's file system or another.
 *
 * @example
 * ```ts
 * import { isNotFound } from "./fs.ts";
 * if (!isNotFound(new Deno.errors.NotFound("x"))) throw new Error("unexpected");
 * ```
 */
export function isNotFound(error: unknown): boolean {
  return error instanceof Deno.errors.NotFound ||
    (error instanceof Error && (error as { code?: string }).code === "ENOENT");
}
