/**
 * Where a tool's path really points, and whether that lies inside the workspace roots.
 * Deno checks the path it is given, not where symlinks lead, so the tools resolve real paths
 * themselves and then work on the resolved path, which Deno's permissions then cover.
 *
 * A path resolved by name can lead elsewhere a moment later (a command running at the same time
 * swaps a directory for a symlink), so the tools that read or change a file open it with
 * {@link openChecked}: the roots and the permission rules are checked on the file as it is
 * opened, once, not on the name before.
 *
 * @module
 */

import { resolve } from "node:path";
import { isInside } from "../lib/files/inside.ts";
import type { ToolContext } from "../lib/tool.ts";
import {
  isNotFound,
  openFile,
  realPathOf,
  type ToolFile,
  type ToolFs,
  type ToolOpenOptions,
} from "./fs.ts";
import { PathChangedError } from "./open_file.ts";

export { isInside, realPathOf };

/**
 * Resolves `path` for a tool that changes files: its real path, refused with a clear error when
 * it lies outside every root (after following `..` and symlinks). What it returns is a name,
 * true when it was resolved: to change the file, open it with {@link openChecked}.
 *
 * @example
 * ```ts
 * import { denoFs } from "./fs.ts";
 * import { resolveInRoots } from "./paths.ts";
 * const cwd = Deno.cwd();
 * await resolveInRoots(denoFs, [cwd], cwd, "inside.txt");
 * let refused = false;
 * await resolveInRoots(denoFs, [cwd], cwd, "../outside.txt").catch(() => refused = true);
 * if (!refused) throw new Error("unexpected");
 * ```
 */
export async function resolveInRoots(
  fs: ToolFs,
  roots: readonly string[],
  cwd: string,
  path: string,
): Promise<string> {
  const workspace = await _workspace(fs, roots, cwd, path);
  const target = await realPathOf(fs, cwd, path);
  workspace.check(target);
  return target;
}

/** Options of {@link openChecked}. */
export interface OpenCheckedOptions extends Pick<ToolOpenOptions, "access" | "create"> {
  /** The directories the file must lie in, symlinks followed; absent, it may lie anywhere. */
  roots?: readonly string[];
  /** The permission rules' check of a real path (the tool context's). */
  checkPath?: ToolContext["checkPath"];
  /** The call's signal: stops a wait before the file is opened. */
  signal?: AbortSignal;
}

/**
 * Opens the file `path` (relative to `cwd`) once, for a tool: its real path is resolved, and the
 * file actually opened must lie inside `roots` and pass `checkPath` before anything is read,
 * created or changed. When the path changes while it is being opened (a symlink put in the
 * file's place, a directory on its way swapped), it is resolved and opened again, a few times,
 * then refused. Errors say what happened in terms of `path`.
 *
 * @example
 * ```ts
 * import { memoryFs } from "../lib/testing/mod.ts";
 * import { openChecked } from "./paths.ts";
 * const fs = memoryFs();
 * fs.put("/w/a.txt", "hi");
 * {
 *   using file = await openChecked(fs, "/w", "a.txt", { roots: ["/w"], access: "read" });
 *   if (file.path !== "/w/a.txt") throw new Error("unexpected");
 * }
 * let refused = "";
 * await openChecked(fs, "/w", "a.txt", {
 *   access: "read",
 *   checkPath: () => "denied by a rule",
 * }).catch((error) => refused = error.message);
 * if (refused !== "denied by a rule") throw new Error(refused);
 * ```
 */
export async function openChecked(
  fs: ToolFs,
  cwd: string,
  path: string,
  options: OpenCheckedOptions = {},
): Promise<ToolFile> {
  const { access = "read", create = false, checkPath, signal } = options;
  const workspace = options.roots ? await _workspace(fs, options.roots, cwd, path) : undefined;
  const check = (real: string) => {
    workspace?.check(real);
    for (const kind of access === "update" ? ["read", "write"] as const : [access]) {
      const refusal = checkPath?.(real, kind);
      if (refusal) throw new Error(refusal);
    }
  };
  const absolute = resolve(cwd, path);
  for (let attempt = 1;; attempt++) {
    try {
      return await openFile(fs, absolute, { access, create, check, signal });
    } catch (error) {
      if (!(error instanceof PathChangedError)) {
        throw await _explained(error, path, () => realPathOf(fs, cwd, path));
      }
      if (attempt === _ATTEMPTS) {
        throw new Error(
          `"${path}" kept changing while it was being opened (a directory on its way, or the ` +
            `file itself, was replaced, e.g. by a command running at the same time); nothing ` +
            `was ${access === "read" ? "read" : "changed"}. Try again once nothing else is ` +
            `changing it.`,
        );
      }
    }
  }
}

/** How many times {@link openChecked} resolves and opens a path that keeps changing. */
const _ATTEMPTS = 3;

/** The workspace of a tool call: the roots, and the check that refuses paths outside them. */
async function _workspace(
  fs: ToolFs,
  roots: readonly string[],
  cwd: string,
  path: string,
): Promise<{ check(real: string): void }> {
  const outside = (where: string) =>
    new Error(
      `"${path}" is outside the workspace${where}. Files may only be changed under ` +
        `${roots.join(", ")}; to allow another directory, start the agent with --add-dir <dir>.`,
    );
  // The path as written must lie inside, and so must the place its symlinks lead to.
  const lexical = roots.map((root) => resolve(cwd, root));
  const real = await Promise.all(roots.map((root) => realPathOf(fs, cwd, root)));
  const within = (target: string, among: string[]) => among.some((root) => isInside(target, root));
  if (!within(resolve(cwd, path), [...lexical, ...real])) throw outside("");
  return {
    check(target) {
      if (!within(target, real)) throw outside(` (it leads to ${target})`);
    },
  };
}

/** A file system error of opening `path` (`real` finds where it leads), in the tool's terms. */
async function _explained(
  error: unknown,
  path: string,
  realOf: () => Promise<string>,
): Promise<unknown> {
  const code = (error as { code?: string } | undefined)?.code ?? (isNotFound(error) && "ENOENT");
  if (!code || !_EXPLAINED.has(code)) return error;
  const real = await realOf().catch(() => path);
  switch (code) {
    case "ENOENT":
      return new Error(
        `"${path}" does not exist (looked for ${real}). Check the path, or list its directory ` +
          `with ls.`,
      );
    case "EISDIR":
      return new Error(`"${path}" is a directory; give a file path`);
    case "ENOTDIR":
      return new Error(
        `"${path}" cannot be reached: a part of ${real} that should be a directory is a file`,
      );
    case "ENXIO":
      return new Error(`"${path}" is not a regular file (a FIFO or a socket); give a file path`);
    case "EACCES":
    case "EPERM":
      return new Error(`"${path}" may not be opened: the file system denies it (${real})`);
    default:
      return error;
  }
}

const _EXPLAINED = new Set(["ENOENT", "EISDIR", "ENOTDIR", "ENXIO", "EACCES", "EPERM"]);
