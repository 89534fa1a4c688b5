/**
 * Files private to the user: what the agent keeps in its data directory (sessions, memory,
 * input history) is readable by its user alone — folders 0700, files 0600 — whether it is
 * created now or was left readable by all by an earlier version.
 *
 * @module
 */

/**
 * Creates a folder (and its missing parents) private to the user (0700), or takes from an
 * existing one what its group and others may do. Where modes do not apply (Windows), or the folder is another user's, it is left as it
 * is.
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
  Deno.mkdirSync(path, { recursive: true, mode: 0o700 });
  _restrict(path);
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

/** Takes away what the group and others may do with `path`. */
function _restrict(path: string): void {
  if (Deno.build.os === "windows") return;
  try {
    const mode = Deno.statSync(path).mode;
    if (mode !== null && (mode & 0o077) !== 0) Deno.chmodSync(path, mode & 0o700);
  } catch {
    // Gone, or not ours to change.
  }
}
