/**
 * The permission rules' checks of what an allowed call's tool actually touches, for its context:
 * each real path a file tool opens or a directory tool walks (`checkPath`), each hop of a redirect
 * the fetch tool follows (`checkUrl`). A call is decided on its input; these keep the rules
 * standing on what the input leads to: a symlink into `secrets/`, `grep` over the parent of
 * `secrets/`, a redirect to a denied host.
 *
 * @module
 */

import type { ToolCallPart } from "../messages.ts";
import type { ToolChecks } from "../tool.ts";
import { describeRule } from "./bash_rules.ts";
import { matchUrl } from "./match.ts";
import { compilePathRule, homeDirectory, type PathMatcher } from "./path_rules.ts";
import { type PermissionRule, ruleCoversTool } from "./rules.ts";

/** Options of {@link toolChecks}. */
export interface ToolChecksOptions {
  /** The working directory: relative patterns are relative to it. */
  cwd: string;
  /** The home directory, for `~/` patterns. */
  home?: string;
  /**
   * Whether the user approved this call when a rule asked: then what ask rules cover is let
   * through (for a URL, on the host the call named).
   */
  approved?: boolean;
}

const _PATH_RULES = new Set(["read", "write", "edit", "ls", "glob", "grep"]);

interface _Compiled {
  rule: PermissionRule;
  access: "read" | "write";
  matches: PathMatcher;
}

/**
 * The checks of one call by the deny and ask rules (allow rules widen nothing here). A path is
 * refused for reading by the path rules that cover the call's tool or `read`, for writing by
 * those that cover it or `write`; a URL by the `fetch` rules.
 *
 * @example
 * ```ts
 * import { parseRule } from "./rules.ts";
 * import { toolChecks } from "./tool_checks.ts";
 * const rules = [parseRule("read(secrets/**)", "deny", "--deny")];
 * const call = { type: "tool_call" as const, id: "1", name: "grep", input: {} };
 * const { checkPath } = await toolChecks(rules, call, { cwd: "/work" });
 * if (!checkPath?.("/work/secrets/key", "read")) throw new Error("not refused");
 * if (checkPath?.("/work/src/a.ts", "read") !== undefined) throw new Error("refused");
 * ```
 */
export async function toolChecks(
  rules: readonly PermissionRule[],
  call: ToolCallPart,
  options: ToolChecksOptions,
): Promise<ToolChecks> {
  const kinds = options.approved ? ["deny"] : ["deny", "ask"];
  const where = { cwd: options.cwd, home: options.home ?? homeDirectory() };
  const narrowing = rules.filter((rule) => kinds.includes(rule.kind));
  const compiled: _Compiled[] = [];
  for (const access of ["read", "write"] as const) {
    for (const rule of narrowing) {
      if (!_PATH_RULES.has(rule.tool)) continue;
      if (!ruleCoversTool(rule.tool, call.name) && !ruleCoversTool(rule.tool, access)) continue;
      const matches: PathMatcher = rule.pattern === undefined
        ? () => true
        : await compilePathRule(rule.pattern, where);
      compiled.push({ rule, access, matches });
    }
  }
  const checks: ToolChecks = {};
  if (compiled.length) {
    // Deny rules first, so that a refusal names the rule that cannot be answered.
    compiled.sort((a, b) => (a.rule.kind === "deny" ? 0 : 1) - (b.rule.kind === "deny" ? 0 : 1));
    checks.checkPath = (path, access) => {
      const hit = compiled.find((entry) => entry.access === access && entry.matches(path, true));
      return hit && _refusal(hit.rule, access === "read" ? `reading ${path}` : `changing ${path}`);
    };
  }
  const host = _host((call.input as { url?: unknown } | undefined)?.url);
  const fetches = rules.filter((rule) =>
    (rule.kind === "deny" || rule.kind === "ask") && ruleCoversTool(rule.tool, "fetch")
  );
  if (fetches.length) {
    checks.checkUrl = (url) => {
      const sameHost = options.approved && host !== undefined && _host(url) === host;
      const hit = fetches.find((rule) =>
        (rule.kind === "deny" || !sameHost) &&
        (rule.pattern === undefined || matchUrl(rule.pattern, url))
      );
      return hit && _refusal(hit, `reaching ${url}`);
    };
  }
  return checks;
}

function _refusal(rule: PermissionRule, what: string): string {
  if (rule.kind === "deny") return `permission denied: ${what} is denied by ${describeRule(rule)}`;
  return `permission denied: ${what} needs approval per ${describeRule(rule)}, and this call ` +
    `was not asked about it; name it in a call of its own to be asked (a headless run refuses it)`;
}

function _host(url: unknown): string | undefined {
  try {
    return typeof url === "string" ? new URL(url).host.toLowerCase() : undefined;
  } catch {
    return undefined;
  }
}
