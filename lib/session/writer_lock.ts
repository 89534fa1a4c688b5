/**
 * One writer per session file. The writer holds an exclusive advisory lock (`flock`) on the
 * session file's open handle for as long as it writes: the lock goes with the handle, so it is
 * released when the writer closes and by the system when the process dies, however it dies.
 * Nothing is left on disk that a later process would have to judge stale (a pid file would be:
 * pids are reused).
 *
 * Taking the lock is one system call when a session is opened; appends do not touch it. Only a
 * process that is refused looks further: on Linux the system's table of locks
 * (`/proc/locks`, when Deno grants reading it) names the process that holds the file.
 *
 * @module
 */

import { SessionError, type SessionHolder } from "./store.ts";

/**
 * Locks an open session file for writing, or closes nothing and throws a {@link SessionError}
 * with reason `busy` that says which process holds it (when the system tells) and what to do.
 * The lock is released when `file` is closed. On a file system without locks (some network
 * ones), writing goes on unlocked, as it did before locks.
 *
 * @example
 * ```ts
 * import { lockSessionFile } from "./writer_lock.ts";
 * const path = await Deno.makeTempFile({ suffix: ".jsonl" });
 * const first = await Deno.open(path, { append: true });
 * lockSessionFile(first, "s1");
 * const second = await Deno.open(path, { append: true });
 * let refused: Error | undefined;
 * try {
 *   lockSessionFile(second, "s1");
 * } catch (error) {
 *   refused = error as Error;
 * }
 * if (!refused?.message.startsWith("Session s1 is being written by another process")) {
 *   throw new Error("unexpected");
 * }
 * second.close();
 * first.close();
 * await Deno.remove(path);
 * ```
 */
export function lockSessionFile(file: Deno.FsFile, id: string): void {
  let locked: boolean;
  try {
    locked = file.tryLockSync(true);
  } catch {
    // A file system without locks: writing goes on as it did without them.
    return;
  }
  if (!locked) throw sessionBusy(id, lockHolder(file));
}

/**
 * The refusal of a second writer: which process holds the session, when known, and what to do.
 *
 * @example
 * ```ts
 * import { sessionBusy } from "./writer_lock.ts";
 * const error = sessionBusy("3f9a2c7e-1b", { pid: 4242 });
 * if (error.reason !== "busy" || !error.message.includes("(pid 4242)")) throw error;
 * ```
 */
export function sessionBusy(id: string, holder: SessionHolder | undefined): SessionError {
  const who = holder
    ? `another process (pid ${holder.pid}${holder.pid === Deno.pid ? ", this one" : ""})`
    : "another process";
  return new SessionError(
    `Session ${id} is being written by ${who}. A session has one writer at a time, so that ` +
      `its lines never interleave: wait until that process ends (or stop it), or go on in a ` +
      `new session.`,
    { reason: "busy", ...(holder ? { holder } : {}) },
  );
}

/**
 * The process that holds an exclusive `flock` on the file, as the system's table of locks says
 * (Linux, when Deno grants reading `/proc/locks`; asked without prompting); `undefined` when it
 * cannot be known.
 *
 * @example
 * ```ts
 * import { lockHolder } from "./writer_lock.ts";
 * const path = await Deno.makeTempFile();
 * using file = await Deno.open(path, { append: true });
 * if (lockHolder(file) !== undefined) throw new Error("nobody holds it yet");
 * file.lockSync(true);
 * const holder = lockHolder(file);
 * if (Deno.build.os === "linux" && holder?.pid !== Deno.pid) throw new Error("unexpected");
 * await Deno.remove(path);
 * ```
 */
export function lockHolder(file: Deno.FsFile): SessionHolder | undefined {
  if (Deno.build.os !== "linux") return undefined;
  try {
    if (Deno.permissions.querySync({ name: "read", path: _LOCKS }).state !== "granted") {
      return undefined;
    }
    const { dev, ino } = file.statSync();
    if (dev === null || ino === null) return undefined;
    // Linux's encoding of a device number: 12 bits of major, 20 of minor, split.
    const device = BigInt(dev);
    const major = ((device >> 8n) & 0xfffn) | ((device >> 32n) & ~0xfffn);
    const minor = (device & 0xffn) | ((device >> 12n) & ~0xffn);
    for (const line of Deno.readTextFileSync(_LOCKS).split("\n")) {
      const match = _LOCK_LINE.exec(line);
      if (
        match && BigInt(`0x${match[2]}`) === major && BigInt(`0x${match[3]}`) === minor &&
        Number(match[4]) === ino && Number(match[1]) > 0
      ) {
        return { pid: Number(match[1]) };
      }
    }
  } catch {
    // The table could not be read: the holder is unknown.
  }
  return undefined;
}

const _LOCKS = "/proc/locks";

/** A held (not waiting: no "->") exclusive flock: pid, major, minor, inode. */
const _LOCK_LINE = /^\d+:\s+FLOCK\s+\S+\s+WRITE\s+(-?\d+)\s+([0-9a-f]+):([0-9a-f]+):(\d+)\s/;
