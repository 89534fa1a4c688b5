/**
 * An in-memory file system for testing tools without touching the disk.
 *
 * @module
 */

import { dirname, posix, resolve } from "node:path";
import type { ToolDirEntry, ToolFileInfo, ToolFs } from "../../tools/fs.ts";

type _Node =
  | { kind: "file"; data: Uint8Array; mtime: Date }
  | { kind: "dir" }
  | { kind: "symlink"; target: string };

/** A {@link ToolFs} held in memory, with helpers to set it up. */
export interface MemoryFs extends ToolFs {
  /** Creates a file (and its parent directories) with text or bytes. */
  put(path: string, content: string | Uint8Array): void;
  /** Creates a symbolic link at `path` pointing to `target`. */
  link(path: string, target: string): void;
  /** The text of a file, or `undefined` when there is none. */
  text(path: string): string | undefined;
}

const encoder = new TextEncoder();

/**
 * Creates an in-memory file system whose root directory `/` exists.
 *
 * @example
 * ```ts
 * import { memoryFs } from "./memory_fs.ts";
 * const fs = memoryFs();
 * fs.put("/work/a.txt", "hello");
 * if (fs.text("/work/a.txt") !== "hello") throw new Error("unexpected");
 * ```
 */
export function memoryFs(): MemoryFs {
  const nodes = new Map<string, _Node>([["/", { kind: "dir" }]]);
  const notFound = (path: string) => new Deno.errors.NotFound(`No such file or directory: ${path}`);

  const mkdirs = (path: string) => {
    for (let dir = path; !nodes.has(dir); dir = dirname(dir)) nodes.set(dir, { kind: "dir" });
  };

  // Follows symlinks in every component of an absolute path.
  const real = (path: string, depth = 0): string => {
    if (depth > 40) throw new Error(`Too many levels of symbolic links: ${path}`);
    let current = "/";
    for (const part of resolve(path).split("/").filter(Boolean)) {
      const next = posix.join(current, part);
      const node = nodes.get(next);
      if (!node) throw notFound(path);
      current = node.kind === "symlink" ? real(resolve(current, node.target), depth + 1) : next;
    }
    return current;
  };

  const info = (node: _Node): ToolFileInfo => ({
    isFile: node.kind === "file",
    isDirectory: node.kind === "dir",
    isSymlink: node.kind === "symlink",
    size: node.kind === "file" ? node.data.length : 0,
    mtime: node.kind === "file" ? node.mtime : null,
  });

  return {
    async readFile(path) {
      const node = nodes.get(real(path));
      if (node?.kind !== "file") throw new Error(`Is a directory: ${path}`);
      return await Promise.resolve(node.data.slice());
    },
    async writeFile(path, data) {
      let target;
      try {
        target = real(path);
      } catch {
        target = posix.join(real(dirname(path)), posix.basename(path));
      }
      nodes.set(target, { kind: "file", data: data.slice(), mtime: new Date() });
      await Promise.resolve();
    },
    stat: (path) => Promise.resolve().then(() => info(nodes.get(real(path))!)),
    lstat(path) {
      const node = nodes.get(posix.join(real(dirname(path)), posix.basename(path)));
      return node ? Promise.resolve(info(node)) : Promise.reject(notFound(path));
    },
    realPath: (path) => Promise.resolve().then(() => real(path)),
    async *readDir(path) {
      const dir = real(path);
      const prefix = dir === "/" ? "/" : `${dir}/`;
      const entries: ToolDirEntry[] = [];
      for (const [key, node] of nodes) {
        if (key === dir || !key.startsWith(prefix) || key.slice(prefix.length).includes("/")) {
          continue;
        }
        entries.push({ name: key.slice(prefix.length), ...info(node) });
      }
      yield* entries.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    },
    mkdir(path, options) {
      if (!options?.recursive && !nodes.has(dirname(resolve(path)))) {
        return Promise.reject(notFound(dirname(path)));
      }
      mkdirs(resolve(path));
      return Promise.resolve();
    },
    put(path, content) {
      mkdirs(dirname(resolve(path)));
      const data = typeof content === "string" ? encoder.encode(content) : content;
      nodes.set(resolve(path), { kind: "file", data, mtime: new Date() });
    },
    link(path, target) {
      mkdirs(dirname(resolve(path)));
      nodes.set(resolve(path), { kind: "symlink", target });
    },
    text(path) {
      const node = nodes.get(resolve(path));
      return node?.kind === "file" ? new TextDecoder().decode(node.data) : undefined;
    },
  };
}
