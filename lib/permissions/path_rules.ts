/**
 * Path rules matched after resolving: a path counts as what it is written as and as its real
 * path (symlinks and `..` followed), and a rule counts as written (anchored at the working
 * directory, the home directory or the root) and with its fixed leading directories resolved
 * too. A symlink in the workspace pointing into `secrets/` is `secrets/…` to the rules, and so
 * is a file reached through a symlinked `secrets` directory.
 *
 * @module
 */

import { basename, dirname, isAbsolute, join, posix, resolve, sep } from "node:path";
import { loadPicomatch } from "../files/glob_match.ts";

/** Tells whether an absolute path matches a rule (with `directory`, its form ending in `/` too). */
export type PathMatcher = (path: string, directory?: boolean) => boolean;

/** Where a path rule is anchored. */
export interface PathRuleContext {
  /** The working directory: relative patterns are relative to it. */
  cwd: string;
  /** The home directory, for patterns starting with `~/`; they match nothing without it. */
  home?: string;
}

const _GLOB = /[*?[\]{}()!+@]/;
const _toPosix = (path: string): string => (sep === "\\" ? path.replaceAll("\\", "/") : path);
const _escapeGlob = (path: string): string => path.replace(/[\\*?[\]{}()!+@|]/g, "\\$&");

/**
 * Compiles a path rule's pattern (a picomatch glob, dotfiles included) into a matcher of
 * absolute paths: the glob anchored where it was written, and the same glob from the real path
 * of its fixed leading directories when that differs.
 *
 * @example
 * ```ts
 * import { compilePathRule } from "./path_rules.ts";
 * const matches = await compilePathRule("secrets/**", { cwd: "/work" });
 * if (!matches("/work/secrets/key") || matches("/work/src/a.ts")) throw new Error("unexpected");
 * if (!matches("/work/secrets", true)) throw new Error("unexpected");
 * ```
 */
export async function compilePathRule(
  pattern: string,
  context: PathRuleContext,
): Promise<PathMatcher> {
  const picomatch = await loadPicomatch();
  let anchor: string;
  let rest: string;
  if (pattern.startsWith("~/")) {
    if (!context.home) return () => false;
    [anchor, rest] = [context.home, pattern.slice(2)];
  } else if (isAbsolute(pattern)) [anchor, rest] = ["/", pattern];
  else [anchor, rest] = [resolve(context.cwd), pattern];
  // The fixed directories at the start of the pattern, then the glob.
  const parts = _toPosix(rest).split("/");
  const fixed = parts.findIndex((part) => _GLOB.test(part));
  const stem = fixed < 0 ? parts : parts.slice(0, fixed);
  const glob = fixed < 0 ? "" : parts.slice(fixed).join("/");
  const base = resolve(anchor, ...stem.filter(Boolean));
  const bases = [_toPosix(base)];
  const real = _toPosix(resolvedPath(base));
  if (real !== bases[0]) bases.push(real);
  const matchers = bases.map((from) => {
    const escaped = _escapeGlob(from);
    const full = glob ? posix.join(escaped, glob) : escaped;
    return picomatch(pattern.endsWith("/") && !full.endsWith("/") ? `${full}/` : full, {
      dot: true,
    });
  });
  return (path, directory = false) => {
    const target = _toPosix(path);
    return matchers.some((match) => match(target) || (directory && match(`${target}/`)));
  };
}

/**
 * The real path of an absolute path, or of its nearest existing ancestor with the rest
 * appended; the path as given where Deno has not granted reading it (it never asks).
 *
 * @example
 * ```ts
 * import { resolvedPath } from "./path_rules.ts";
 * const real = resolvedPath(`${Deno.makeTempDirSync()}/no/such/file`);
 * if (!real.endsWith("/no/such/file")) throw new Error(real);
 * ```
 */
export function resolvedPath(path: string): string {
  try {
    if (Deno.permissions.querySync({ name: "read", path }).state !== "granted") return path;
    return Deno.realPathSync(path);
  } catch {
    const parent = dirname(path);
    return parent === path ? path : join(resolvedPath(parent), basename(path));
  }
}

/**
 * `$HOME` (or `%USERPROFILE%`) when Deno grants reading it; it never asks.
 *
 * @example
 * ```ts
 * import { homeDirectory } from "./path_rules.ts";
 * const home = homeDirectory();
 * if (home !== undefined && typeof home !== "string") throw new Error("unexpected");
 * ```
 */
export function homeDirectory(): string | undefined {
  for (const variable of ["HOME", "USERPROFILE"]) {
    if (Deno.permissions.querySync({ name: "env", variable }).state !== "granted") continue;
    const value = Deno.env.get(variable);
    if (value) return value;
  }
  return undefined;
}
