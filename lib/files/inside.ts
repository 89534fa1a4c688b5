/**
 * Whether a path lies inside a root, by name: the check of every path rule and workspace root,
 * made on a path already resolved.
 * @module
 */

import { isAbsolute, relative, sep } from "node:path";

/**
 * Whether `path` is `root` or lies below it. Both must be real absolute paths.
 *
 * @example
 * ```ts
 * import { isInside } from "./inside.ts";
 * if (!isInside("/work/a/b.txt", "/work") || isInside("/workshop", "/work")) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function isInside(path: string, root: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}
