/**
 * The second tier of what the file tools keep their hands off: the files that make programs
 * outside the sandbox run code later (`.agent/`, `.mcp.json`, `.envrc`, git's config and hooks,
 * the editors' settings, the shells' startup files; the one list is the sandbox's, see
 * `protectedEntry`). Unlike the agent's own settings and data, which no rule opens, these are
 * changed when a permission rule allows it explicitly: an allow rule for the tool whose pattern
 * names the entry (`write(.git/config)`, `edit(**\/.envrc)`, `write(.agent/**)`). A rule for
 * every call of the tool, a pattern that names no such entry (`write(**)`), a permission mode
 * (accept-edits) or a headless run's grants are not explicit.
 *
 * @module
 */

import { basename, dirname, join, resolve } from "node:path";
import type { PermissionRequest } from "../hooks.ts";
import { type ProtectedEntry, protectedEntry } from "../sandbox/protected.ts";
import { evaluateRules, type PermissionRule, ruleCoversTool } from "./rules.ts";

/** Tools that change files by name whatever their capabilities say. */
const _FILE_CHANGERS = new Set(["write", "edit"]);

/**
 * Why a call may not change the protected entry its path is or lies in (its path as given or
 * its real path, symbolic links followed), or `undefined` when it may: it changes no file, the
 * path is no protected entry's, or an allow rule among `rules` names the entry and matches the
 * call. The reason says what would run and the rule that would allow it.
 *
 * @example
 * ```ts
 * import { parseRule } from "./rules.ts";
 * import { protectedWriteRefusal } from "./protected_writes.ts";
 * const request = {
 *   call: { type: "tool_call", id: "1", name: "write", input: { path: ".git/config", content: "" } },
 *   tool: { name: "write", description: "", inputSchema: {}, capabilities: ["write"], execute: () => "" },
 *   cwd: "/nonexistent/work",
 *   signal: new AbortController().signal,
 * } as const;
 * const broad = [parseRule("write", "allow", "--allow")];
 * if (!(await protectedWriteRefusal(request, broad))?.includes('--allow "write(.git/config)"')) {
 *   throw new Error("unexpected");
 * }
 * const named = [parseRule("write(.git/config)", "allow", "--allow")];
 * if (await protectedWriteRefusal(request, named) !== undefined) throw new Error("unexpected");
 * ```
 */
export async function protectedWriteRefusal(
  request: Pick<PermissionRequest, "call" | "tool" | "cwd">,
  rules: readonly PermissionRule[],
  home: string | undefined = _home(),
): Promise<string | undefined> {
  const found = await _decide(request, rules, home);
  return found && !found.allowed
    ? _refusal(found.entry, request.call.name, found.shown)
    : undefined;
}

/**
 * The check, for the tool's context, of each real path a call opens to change: a protected
 * entry is refused unless it is the one the call named and a rule allowed (so that a symbolic
 * link swapped in between the decision and the opening leads nowhere protected). Reading is
 * never refused here.
 *
 * @example
 * ```ts
 * import { protectedWriteCheck } from "./protected_writes.ts";
 * const check = await protectedWriteCheck({
 *   call: { type: "tool_call", id: "1", name: "write", input: { path: "notes.md", content: "" } },
 *   tool: { name: "write", description: "", inputSchema: {}, capabilities: ["write"], execute: () => "" },
 *   cwd: "/nonexistent/work",
 * }, []);
 * if (!check("/nonexistent/work/.git/hooks/pre-commit", "write")) throw new Error("not refused");
 * if (check("/nonexistent/work/notes.md", "write") || check("/w/.git/config", "read")) {
 *   throw new Error("refused");
 * }
 * ```
 */
export async function protectedWriteCheck(
  request: Pick<PermissionRequest, "call" | "tool" | "cwd">,
  rules: readonly PermissionRule[],
  home: string | undefined = _home(),
): Promise<(path: string, access: "read" | "write") => string | undefined> {
  const found = await _decide(request, rules, home);
  const allowed = found?.allowed ? found.entry.path : undefined;
  return (path, access) => {
    if (access !== "write") return undefined;
    const entry = protectedEntry(path, home);
    if (!entry || entry.path === allowed) return undefined;
    return _refusal(entry, request.call.name, path);
  };
}

/** The protected entry a call's path is in, and whether a rule that names it allows the call. */
async function _decide(
  request: Pick<PermissionRequest, "call" | "tool" | "cwd">,
  rules: readonly PermissionRule[],
  home: string | undefined,
): Promise<{ entry: ProtectedEntry; allowed: boolean; shown: string } | undefined> {
  const { call, cwd } = request;
  const changes = _FILE_CHANGERS.has(call.name) ||
    (request.tool?.capabilities ?? []).includes("write");
  const path = (call.input as { path?: unknown } | undefined)?.path;
  if (!changes || typeof path !== "string") return undefined;
  const given = resolve(cwd, path);
  const entry = protectedEntry(given, home) ?? protectedEntry(_real(given), home);
  if (!entry) return undefined;
  const shown = _shown(path, cwd);
  for (const rule of rules) {
    if (rule.kind !== "allow" || !rule.pattern || !ruleCoversTool(rule.tool, call.name)) continue;
    if (!rule.pattern.toLowerCase().includes(entry.anchor.toLowerCase())) continue;
    if ((await evaluateRules([rule], call, { cwd, home })).decision === "allow") {
      return { entry, allowed: true, shown };
    }
  }
  return { entry, allowed: false, shown };
}

function _refusal(entry: ProtectedEntry, tool: string, shown: string): string {
  return `${entry.path} would run code outside the sandbox (${entry.why}), so the file tools ` +
    `change it only under a rule that names it: ask the user to allow it, e.g. ` +
    `--allow "${tool}(${shown})", if they want it changed`;
}

/** The path as a rule would name it: relative to the working directory when inside it. */
function _shown(path: string, cwd: string): string {
  const absolute = resolve(cwd, path);
  const prefix = cwd.endsWith("/") ? cwd : `${cwd}/`;
  return absolute.startsWith(prefix) ? absolute.slice(prefix.length) : absolute;
}

/** The real path of `path`, or of its nearest existing ancestor with the rest appended. */
function _real(path: string): string {
  try {
    // Never a question from Deno: without read access, the path is taken as written.
    if (Deno.permissions.querySync({ name: "read", path }).state !== "granted") return path;
    return Deno.realPathSync(path);
  } catch {
    const parent = dirname(path);
    return parent === path ? path : join(_real(parent), basename(path));
  }
}

/** `$HOME` when Deno grants reading it; never a question. */
function _home(): string | undefined {
  if (Deno.permissions.querySync({ name: "env", variable: "HOME" }).state !== "granted") return;
  return Deno.env.get("HOME") || undefined;
}
