/**
 * Where a tool's path really points, and whether that lies inside the workspace roots.
 * Deno checks the path it is given, not where symlinks lead, so the tools resolve real paths
 * themselves and then work on the resolved path, which Deno's permissions then cover.
 *
 * @module
 */

import { basename, dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { isNotFound, type ToolFs } from "./fs.ts";

/**
 * The real absolute path of `path` (relative to `cwd`): symlinks and `..` resolved. For a path
 * that does not exist yet, its nearest existing ancestor is resolved and the rest appended.
 *
 * @example
 * ```ts
 * import { denoFs } from "./fs.ts";
 * import { realPathOf } from "./paths.ts";
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
 * Whether `path` is `root` or lies below it. Both must be real absolute paths.
 *
 * @example
 * ```ts
 * import { isInside } from "./paths.ts";
 * if (!isInside("/work/a/b.txt", "/work") || isInside("/workshop", "/work")) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function isInside(path: string, root: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/**
 * Resolves `path` for a tool that changes files: its real path, refused with a clear error when
 * it lies outside every root (after following `..` and symlinks).
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
  const outside = (where: string) =>
    new Error(
      `"${path}" is outside the workspace${where}. Files may only be changed under ` +
        `${roots.join(", ")}; to allow another directory, start the agent with --add-dir <dir>.`,
    );
  // The path as written must lie inside, and so must the place its symlinks lead to.
  const lexical = roots.map((root) => resolve(cwd, root));
  const real = await Promise.all(roots.map((root) => realPathOf(fs, cwd, root)));
  const absolute = resolve(cwd, path);
  const within = (target: string, among: string[]) => among.some((root) => isInside(target, root));
  if (!within(absolute, [...lexical, ...real])) throw outside("");
  const target = await realPathOf(fs, cwd, path);
  if (!within(target, real)) throw outside(` (it leads to ${target})`);
  return target;
}
