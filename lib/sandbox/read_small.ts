/**
 * Reading the small files a sandboxed command may have touched (git's index and pointers,
 * `.gitmodules`, placeholders) without letting it freeze the agent: a file is opened once,
 * without blocking, and read only when what was opened is a regular file of at most the size
 * asked. A FIFO swapped in by a command still running would otherwise block the whole process
 * in a synchronous read, with no way for Ctrl+C to act.
 *
 * @module
 */

import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";

/**
 * The bytes of the regular file at `path`, when it holds at most `max` bytes; `undefined` when it
 * is absent, not a regular file (a FIFO, a device, a directory), larger, or unreadable.
 *
 * @example
 * ```ts
 * import { readSmallFileSync } from "./read_small.ts";
 * const path = await Deno.makeTempFile();
 * await Deno.writeTextFile(path, "gitdir: ../x\n");
 * if (new TextDecoder().decode(readSmallFileSync(path, 4096)) !== "gitdir: ../x\n") {
 *   throw new Error("unexpected");
 * }
 * if (readSmallFileSync(path, 4) !== undefined) throw new Error("larger than asked");
 * await Deno.remove(path);
 * ```
 */
export function readSmallFileSync(path: string, max: number): Uint8Array | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile() || info.size > max) return undefined;
    const bytes = new Uint8Array(info.size);
    let filled = 0;
    while (filled < bytes.length) {
      const read = readSync(fd, bytes, filled, bytes.length - filled, filled);
      if (read === 0) break;
      filled += read;
    }
    return bytes.subarray(0, filled);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * The text of the regular file at `path`, as {@link readSmallFileSync} reads it.
 *
 * @example
 * ```ts
 * import { readSmallTextSync } from "./read_small.ts";
 * if (readSmallTextSync("/nonexistent/.gitmodules", 4096) !== undefined) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function readSmallTextSync(path: string, max: number): string | undefined {
  const bytes = readSmallFileSync(path, max);
  return bytes && new TextDecoder().decode(bytes);
}
