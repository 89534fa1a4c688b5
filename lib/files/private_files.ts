/**
 * Files private to the user: what the agent keeps in its data directory (sessions, memory,
 * input history, trust decisions) is readable by its user alone — folders 0700, files 0600 —
 * whether it is created now or was left readable by all by an earlier version. A folder that
 * cannot be the user's alone (another user's, or one others may write and that cannot be made
 * private, or one below a directory others may write) is refused: nothing is kept there.
 *
 * @module
 */

import { dirname, join } from "node:path";
import { unsafeDirectory, userId } from "./own_files.ts";

/**
 * Creates a folder (and its missing parents) private to the user (0700), or takes from an
 * existing one what its group and others may do. Throws, creating nothing, when the folder cannot
 * be the user's alone (see {@link checkPrivateDir}). Where modes do not apply (Windows), it is
 * only created.
 *
 * @example
 * ```ts
 * import { ensurePrivateDir } from "./private_files.ts";
 * const dir = `${await Deno.makeTempDir()}/data/sessions`;
 * ensurePrivateDir(dir);
 * if (Deno.build.os !== "windows" && (Deno.statSync(dir).mode! & 0o777) !== 0o700) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function ensurePrivateDir(path: string): void {
  const why = checkPrivateDir(path);
  if (why) throw new Error(`${path} cannot be the user's alone: ${why}`);
  Deno.mkdirSync(path, { recursive: true, mode: 0o700 });
  _restrict(path);
}

/**
 * Why `path` cannot be a folder private to the user, or `undefined` when it can: it belongs to
 * another user, others may write it and it cannot be made private, or a directory above it
 * belongs to another user or others may write it (so that they could put theirs in its place;
 * a sticky one such as `/tmp` is fine). When it exists and is the user's, it is made private
 * (0700) on the way. What does not exist yet, or what Deno does not already let the agent read,
 * is not looked at (nobody is asked).
 *
 * @example
 * ```ts
 * import { checkPrivateDir } from "./private_files.ts";
 * const dir = await Deno.makeTempDir();
 * if (Deno.build.os !== "windows") {
 *   Deno.chmodSync(dir, 0o777);
 *   const why = checkPrivateDir(`${dir}/data`);
 *   if (why !== `others may write the directory ${dir}`) throw new Error(why);
 *   if (checkPrivateDir(dir) !== undefined || (Deno.statSync(dir).mode! & 0o777) !== 0o700) {
 *     throw new Error("not made private");
 *   }
 * }
 * ```
 */
export function checkPrivateDir(path: string): string | undefined {
  if (Deno.build.os === "windows") return undefined;
  const uid = userId();
  let info: Deno.FileInfo | undefined;
  try {
    if (_may("read", path)) info = Deno.statSync(path);
  } catch {
    // Not there yet: made private when it is created.
  }
  if (info) {
    if (!info.isDirectory) return "it is not a directory";
    if (uid !== undefined && info.uid !== null && info.uid !== uid) {
      return `it belongs to another user (uid ${info.uid})`;
    }
    _restrict(path);
    const mode = _may("read", path) ? Deno.statSync(path).mode : null;
    if (mode !== null && (mode & 0o022) !== 0) {
      return "others may write it, and it cannot be made private";
    }
  }
  return unsafeDirectory(dirname(path), "/", uid);
}

/**
 * Takes from an existing file what its group and others may do (0644 becomes 0600); does
 * nothing when it does not exist, where modes do not apply (Windows), or when it is another
 * user's.
 *
 * @example
 * ```ts
 * import { ensurePrivateFile } from "./private_files.ts";
 * const path = await Deno.makeTempFile();
 * await Deno.chmod(path, 0o644);
 * ensurePrivateFile(path);
 * if (Deno.build.os !== "windows" && (Deno.statSync(path).mode! & 0o777) !== 0o600) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function ensurePrivateFile(path: string): void {
  _restrict(path);
}

/** Takes away what the group and others may do with `path`, when Deno lets the agent. */
function _restrict(path: string): void {
  if (Deno.build.os === "windows") return;
  try {
    if (!_may("read", path) || !_may("write", path)) return;
    const mode = Deno.statSync(path).mode;
    if (mode !== null && (mode & 0o077) !== 0) Deno.chmodSync(path, mode & 0o700);
  } catch {
    // Gone, or not ours to change.
  }
}

/** Whether Deno already lets the agent read or write `path` (never asking). */
function _may(name: "read" | "write", path: string): boolean {
  return Deno.permissions.querySync({ name, path }).state === "granted";
}

/**
 * Writes `text` to `path` whole, for the user alone: into a new file made 0600 (whatever the
 * umask) in `path`'s directory, made the user's alone first, then renamed over `path`, so that a
 * reader finds the old content or the new one, never a part, and nobody else ever can.
 *
 * @example
 * ```ts
 * import { writePrivateFile } from "./private_files.ts";
 * const dir = Deno.makeTempDirSync();
 * writePrivateFile(`${dir}/keep/token`, "t0ken\n");
 * if (Deno.readTextFileSync(`${dir}/keep/token`) !== "t0ken\n") throw new Error("unexpected");
 * if (Deno.build.os !== "windows" && (Deno.statSync(`${dir}/keep/token`).mode! & 0o777) !== 0o600) {
 *   throw new Error("not private");
 * }
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function writePrivateFile(path: string, text: string): void {
  const dir = dirname(path);
  ensurePrivateDir(dir);
  const temporary = join(dir, `.${crypto.randomUUID()}.tmp`);
  const file = Deno.openSync(temporary, { write: true, createNew: true, mode: 0o600 });
  try {
    if (Deno.build.os !== "windows") Deno.chmodSync(temporary, 0o600); // whatever the umask
    file.writeSync(new TextEncoder().encode(text));
  } finally {
    file.close();
  }
  try {
    Deno.renameSync(temporary, path);
  } catch (error) {
    Deno.removeSync(temporary);
    throw error;
  }
}
