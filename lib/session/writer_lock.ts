/**
 * One writer per session file. The writer holds an exclusive advisory lock (`flock`) on the
 * session file's open handle for as long as it writes: the lock goes with the handle, so it is
 * released when the writer closes and by the system when the process dies, however it dies —
 * nothing is left behind that a later process must judge stale (a pid alone would be: pids are
 * reused). Beside it, a small note `<id>.writer` says who holds the session (pid and since when),
 * only so that a process refused can say so; the lock alone decides.
 *
 * Taking the lock is one system call when a session is opened; appends do not touch it.
 *
 * @module
 */

import { SessionError, type SessionHolder } from "./store.ts";

/** A session file's lock, held. */
export interface WriterLock {
  /** Removes the holder's note. The lock itself goes when the file's handle is closed. */
  release(): void;
}

/**
 * Locks an open session file for writing, or throws a {@link SessionError} with reason `busy`
 * that says which process holds it and what to do. On success, leaves a note of this process
 * beside the file (`<id>.writer`, private to the user) for a process that would be refused.
 *
 * @example
 * ```ts
 * import { lockSessionFile } from "./writer_lock.ts";
 * const dir = await Deno.makeTempDir();
 * const path = `${dir}/s1.jsonl`;
 * const first = await Deno.open(path, { append: true, create: true });
 * const lock = lockSessionFile(first, path, "s1");
 * const second = await Deno.open(path, { append: true });
 * const refused = (() => {
 *   try {
 *     lockSessionFile(second, path, "s1");
 *   } catch (error) {
 *     return error as Error;
 *   }
 * })();
 * if (!refused?.message.includes(`pid ${Deno.pid}`)) throw new Error("unexpected");
 * second.close();
 * lock.release();
 * first.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export function lockSessionFile(file: Deno.FsFile, path: string, id: string): WriterLock {
  const note = holderNotePath(path);
  let locked: boolean;
  try {
    locked = file.tryLockSync(true);
  } catch {
    // A file system without locks (some network ones): writing goes on as it did without them.
    return { release() {} };
  }
  if (!locked) throw sessionBusy(id, readHolderNote(note));
  const holder: SessionHolder = { pid: Deno.pid, since: new Date().toISOString() };
  try {
    Deno.writeTextFileSync(note, JSON.stringify(holder) + "\n", { mode: 0o600 });
  } catch {
    // Only a courtesy to a process that would be refused: the lock holds without it.
  }
  return {
    release() {
      try {
        Deno.removeSync(note);
      } catch {
        // Gone already, or never written.
      }
    },
  };
}

/**
 * The refusal of a second writer: which process holds the session, when known, and what to do.
 *
 * @example
 * ```ts
 * import { sessionBusy } from "./writer_lock.ts";
 * const error = sessionBusy("3f9a2c7e-1b", { pid: 4242, since: "2025-01-01T10:00:00.000Z" });
 * if (error.reason !== "busy" || !error.message.includes("pid 4242")) throw error;
 * ```
 */
export function sessionBusy(id: string, holder: SessionHolder | undefined): SessionError {
  const who = holder
    ? `another process (pid ${holder.pid}${
      holder.pid === Deno.pid ? ", this one" : ""
    }, since ${holder.since})`
    : "another process";
  return new SessionError(
    `Session ${id} is being written by ${who}. A session has one writer at a time, so that ` +
      `its lines never interleave: wait until that process ends (or stop it), or go on in a ` +
      `new session.`,
    { reason: "busy", ...(holder ? { holder } : {}) },
  );
}

/**
 * Where the note of a session file's holder is kept: beside it, `<id>.writer`.
 *
 * @example
 * ```ts
 * import { holderNotePath } from "./writer_lock.ts";
 * if (holderNotePath("/d/p/s1.jsonl") !== "/d/p/s1.writer") throw new Error("unexpected");
 * ```
 */
export function holderNotePath(path: string): string {
  return path.replace(/\.jsonl$/, "") + ".writer";
}

/**
 * The holder a note names, when it can be read and is one.
 *
 * @example
 * ```ts
 * import { readHolderNote } from "./writer_lock.ts";
 * if (readHolderNote("/nonexistent/s1.writer") !== undefined) throw new Error("unexpected");
 * ```
 */
export function readHolderNote(note: string): SessionHolder | undefined {
  try {
    const value = JSON.parse(Deno.readTextFileSync(note));
    if (Number.isInteger(value?.pid) && typeof value.since === "string") {
      return { pid: value.pid, since: value.since.slice(0, 40) };
    }
  } catch {
    // No note (written between the lock and now, or not at all): the holder is unknown.
  }
  return undefined;
}
