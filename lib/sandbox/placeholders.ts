/**
 * Placeholders: what stands in place of an absent protected entry while a sandbox runs, so that
 * there is something to bind read-only there and a command can create nothing of that name.
 * bwrap would make an empty file or directory itself, and leave it behind: an empty
 * `.mcp.json` the agent cannot read, an empty `commondir` that git dies on. So the agent makes
 * them, marked as its own (a file of mode 0400 holding what it should, an empty directory of mode
 * 0500), holds each with a shared lock while its sandbox runs, and takes it away once the sandbox
 * has ended, unless another sandbox, of this process or another, still holds it (that one takes
 * it away in turn). A placeholder left behind (the agent was killed) is taken over by the next
 * sandbox over the same directory, and removed when that one ends.
 *
 * @module
 */

import { readSmallTextSync } from "./read_small.ts";

/** What stands in place of an absent protected entry while a sandbox runs. */
export interface Placeholder {
  /** Where. */
  path: string;
  /** A file or a directory. */
  kind: "file" | "dir";
  /** A file's content (default empty). */
  content?: string;
}

/** Placeholders held for one sandbox. */
export interface HeldPlaceholders {
  /** The paths held (each now exists, to be bound read-only over itself). */
  paths: string[];
  /** Lets them go, removing those no other sandbox holds; safe to call more than once. */
  release(): void;
  /**
   * Lets them go and leaves them there, for the next sandbox over the same directory to take
   * away: for a caller that cannot tell when its sandbox ends.
   */
  leave(): void;
}

const _FILE_MODE = 0o400;
const _DIR_MODE = 0o500;
const _held = new Set<HeldPlaceholders>();

/**
 * Makes (or takes over) each placeholder and holds it until `release()`. A path found taken by
 * something that is not a placeholder (made meanwhile by someone else) is held as it is: it is
 * bound read-only all the same. Throws when a placeholder cannot be made (the message says
 * where and why), after letting go of those already held.
 *
 * @example
 * ```ts
 * import { holdPlaceholders } from "./placeholders.ts";
 * const dir = Deno.makeTempDirSync();
 * const held = holdPlaceholders([{ path: `${dir}/.envrc`, kind: "file" }]);
 * if (Deno.statSync(`${dir}/.envrc`).size !== 0) throw new Error("unexpected");
 * held.release();
 * if (Deno.readDirSync(dir).next().done !== true) throw new Error("left behind");
 * Deno.removeSync(dir);
 * ```
 */
export function holdPlaceholders(list: readonly Placeholder[]): HeldPlaceholders {
  const handles: { entry: Placeholder; file?: Deno.FsFile }[] = [];
  const held: HeldPlaceholders = {
    paths: list.map((entry) => entry.path),
    release() {
      if (!_held.delete(held)) return;
      for (const { file } of handles) file?.close();
      for (const { entry, file } of handles) if (file) _removeUnlessHeld(entry);
    },
    leave() {
      if (!_held.delete(held)) return;
      for (const { file } of handles) file?.close();
    },
  };
  _held.add(held);
  try {
    for (const entry of list) handles.push({ entry, file: _hold(entry) });
  } catch (error) {
    held.release();
    throw error;
  }
  return held;
}

/**
 * Whether `path` is a placeholder as {@link holdPlaceholders} makes them (of this kind and
 * content), and not something of the user's.
 *
 * @example
 * ```ts
 * import { isPlaceholder } from "./placeholders.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/.envrc`, "");
 * if (isPlaceholder({ path: `${dir}/.envrc`, kind: "file" })) throw new Error("a user's file");
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function isPlaceholder(entry: Placeholder): boolean {
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(entry.path);
  } catch {
    return false;
  }
  const mode = (info.mode ?? 0) & 0o7777;
  if (entry.kind === "dir") {
    if (!info.isDirectory || mode !== _DIR_MODE) return false;
    try {
      return Deno.readDirSync(entry.path).next().done === true;
    } catch {
      return false;
    }
  }
  const content = entry.content ?? "";
  if (
    !info.isFile || mode !== _FILE_MODE || info.size !== new TextEncoder().encode(content).length
  ) {
    return false;
  }
  try {
    return readSmallTextSync(entry.path, info.size) === content;
  } catch {
    return false;
  }
}

/** Makes or takes over one placeholder, and holds it with a shared lock. */
function _hold(entry: Placeholder): Deno.FsFile | undefined {
  for (let attempt = 0; attempt < 5; attempt++) {
    let made = false;
    try {
      _make(entry);
      made = true;
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) {
        throw new Error(
          `Cannot guard ${entry.path} in the sandbox (a command could create it): ${
            (error as Error).message
          }`,
          { cause: error },
        );
      }
      // Something is there: a placeholder to share, or what someone made meanwhile.
      if (!isPlaceholder(entry)) return undefined;
    }
    let file: Deno.FsFile;
    try {
      file = Deno.openSync(entry.path, { read: true });
    } catch {
      continue; // Taken away meanwhile: make it again.
    }
    file.lockSync(false);
    // Still the one at that path (not one removed while this waited for the lock)?
    const same = (() => {
      try {
        return Deno.lstatSync(entry.path).ino === file.statSync().ino;
      } catch {
        return false;
      }
    })();
    // What this made is what it should be; what it found is checked again, now that it is held.
    if (same && (made || isPlaceholder(entry))) return file;
    file.close();
  }
  throw new Error(`Cannot guard ${entry.path} in the sandbox: it keeps changing`);
}

function _make(entry: Placeholder): void {
  if (entry.kind === "dir") {
    Deno.mkdirSync(entry.path, { mode: _DIR_MODE });
    // The process's umask may have taken more than it should (it never adds).
    Deno.chmodSync(entry.path, _DIR_MODE);
    return;
  }
  const file = Deno.openSync(entry.path, { createNew: true, write: true, mode: _FILE_MODE });
  try {
    if (entry.content) file.writeSync(new TextEncoder().encode(entry.content));
  } finally {
    file.close();
  }
  Deno.chmodSync(entry.path, _FILE_MODE);
}

/**
 * Removes a placeholder unless another sandbox holds it (or it is no longer one). A lock just
 * let go can outlive its handle's close for a moment, in a process being started (between its
 * fork and its exec it holds a copy of every handle): when no sandbox of this process holds the
 * path, a refused lock is tried again a few times, about a quarter of a second in all, so that
 * the placeholder is not left in the workspace.
 */
function _removeUnlessHeld(entry: Placeholder, wait = 1): void {
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(entry.path, { read: true });
  } catch {
    return;
  }
  try {
    if (!file.tryLockSync(true)) {
      const heldHere = [..._held].some((held) => held.paths.includes(entry.path));
      if (!heldHere && wait <= 128) {
        setTimeout(() => _removeUnlessHeld(entry, wait * 2), wait);
      }
      return;
    }
    if (Deno.lstatSync(entry.path).ino !== file.statSync().ino || !isPlaceholder(entry)) return;
    Deno.removeSync(entry.path);
  } catch {
    // Gone already, or not the agent's to remove.
  } finally {
    file.close();
  }
}

// Whatever ends the process, what it holds is let go (its sandboxes die with it).
globalThis.addEventListener("unload", () => {
  for (const held of [..._held]) held.release();
});
