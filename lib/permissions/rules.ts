/**
 * Permission rules that narrow what Deno grants: `bash(git *)`, `write(src/**)`,
 * `fetch(domain:example.com)`, `mcp__github__*`, each to allow, ask or deny. They never widen
 * Deno's permissions: a call Deno refuses stays refused whatever the rules say.
 *
 * @module
 */

import { describeRule, evaluateBash } from "./bash_rules.ts";
import { resolve } from "node:path";
import { matchUrl, normalHost, wildcard } from "./match.ts";
import { compilePathRule, homeDirectory, resolvedPath } from "./path_rules.ts";

/** What a rule does to the calls it matches. */
export type RuleKind = "allow" | "ask" | "deny";

/** A parsed permission rule. */
export interface PermissionRule {
  /** What the rule does to matching calls. */
  kind: RuleKind;
  /** The tool it concerns: `bash`, `read`, `mcp__github__*`, `mcp__github` (a whole server). */
  tool: string;
  /** What is inside the parentheses; absent for a rule on every call of the tool. */
  pattern?: string;
  /** The rule as written. */
  text: string;
  /** Where it came from: `--deny`, or a settings file's path. */
  source: string;
}

/** A tool call, as the rules see it. */
export interface RuleCall {
  /** The tool's name. */
  name: string;
  /** The tool's input. */
  input: unknown;
}

/** Where a call is evaluated. */
export interface RuleContext {
  /** The working directory: relative paths and patterns are relative to it. */
  cwd: string;
  /** The home directory for `~/` patterns; `$HOME` when absent and env access is granted. */
  home?: string;
}

/** The outcome: which kind of rule decided and why; no decision when no rule concerns the call. */
export interface RuleDecision {
  /** `deny` beats `ask`, which beats `allow`; undefined when no rule decides. */
  decision?: RuleKind;
  /** The rule that decided (for an allowed bash line with several commands, the first). */
  rule?: PermissionRule;
  /** Which rule decided, on what (`denied by --deny "bash(rm *)": "rm x" in "ls; rm x"`). */
  reason?: string;
}

const _BUILTIN: Record<string, string> = {
  bash: "bash",
  read: "read",
  write: "write",
  edit: "edit",
  ls: "ls",
  glob: "glob",
  grep: "grep",
  fetch: "fetch",
  web_search: "web_search",
  todo: "todo",
  // The names other coding agents give these tools.
  webfetch: "fetch",
  websearch: "web_search",
  todowrite: "todo",
  multiedit: "edit",
};

/** Which calls a built-in rule covers beyond its own tool: reading and changing files. */
const _COVERS: Record<string, readonly string[]> = {
  read: ["read", "ls", "glob", "grep"],
  write: ["write", "edit"],
  edit: ["write", "edit"],
};

const _PATH_TOOLS = new Set(["read", "write", "edit", "ls", "glob", "grep"]);

/**
 * Parses a rule: `tool` (every call of the tool) or `tool(pattern)`. Built-in tool names are
 * case-insensitive (`Bash(git *)` is `bash(git *)`); `*` may stand in tool names
 * (`mcp__github__*`); `mcp__<server>` means every tool of that server. Throws a `TypeError`
 * that shows the rule when its syntax is wrong.
 *
 * @example
 * ```ts
 * import { parseRule } from "./rules.ts";
 * const rule = parseRule("Bash(git *)", "allow", "--allow");
 * if (rule.tool !== "bash" || rule.pattern !== "git *") throw new Error("unexpected");
 * let refused = false;
 * try {
 *   parseRule("bash(git *", "deny", "--deny");
 * } catch (error) {
 *   refused = error instanceof TypeError;
 * }
 * if (!refused) throw new Error("unexpected");
 * ```
 */
export function parseRule(text: string, kind: RuleKind, source: string): PermissionRule {
  const fail = (why: string): never => {
    throw new TypeError(`Invalid permission rule "${text}" (${source}): ${why}`);
  };
  if (kind !== "allow" && kind !== "ask" && kind !== "deny") {
    fail(`the kind must be allow, ask or deny, not "${kind}"`);
  }
  const trimmed = text.trim();
  const open = trimmed.indexOf("(");
  const name = open < 0 ? trimmed : trimmed.slice(0, open).trim();
  if (open < 0 && trimmed.includes(")")) fail('")" without "("');
  if (!name) fail('it names no tool; write "tool" or "tool(pattern)", e.g. "bash(git *)"');
  if (!/^[A-Za-z0-9_*-]+$/.test(name)) {
    fail(`"${name}" is not a tool name (letters, digits, "_", "-" and "*")`);
  }
  if (open >= 0 && !trimmed.endsWith(")")) fail('unbalanced parentheses: it must end with ")"');
  const tool = _BUILTIN[name.toLowerCase()] ?? name;
  if (/^mcp__(_|$)/.test(tool) || /^mcp__.+__$/.test(tool)) {
    fail('an MCP rule is "mcp__<server>" or "mcp__<server>__<tool>"');
  }
  if (open < 0) return { kind, tool, text, source };
  const pattern = trimmed.slice(open + 1, -1).trim();
  if (!pattern) fail(`the pattern in parentheses is empty; write "${tool}" for every call`);
  if (tool === "todo") fail('todo rules take no pattern; write "todo"');
  if (tool === "fetch" && pattern.startsWith("domain:")) {
    const domain = pattern.slice(7).trim();
    if (!normalHost(domain) || !/[\p{L}\p{N}]/u.test(domain)) {
      fail(`"${domain}" is not a domain; write e.g. "fetch(domain:example.com)"`);
    }
    return { kind, tool, pattern: `domain:${domain}`, text, source };
  }
  return { kind, tool, pattern, text, source };
}

/**
 * Whether a rule's tool covers a call's tool: same name, a `*` wildcard, `mcp__<server>` for
 * that server's tools; `read` also covers ls, glob and grep; `write` and `edit` cover each other.
 *
 * @example
 * ```ts
 * import { ruleCoversTool } from "./rules.ts";
 * if (!ruleCoversTool("mcp__github", "mcp__github__create_issue")) throw new Error("unexpected");
 * if (!ruleCoversTool("read", "grep") || ruleCoversTool("mcp__git", "mcp__github__x")) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function ruleCoversTool(ruleTool: string, name: string): boolean {
  if (ruleTool.includes("*")) return wildcard(ruleTool).test(name);
  if (/^mcp__/.test(ruleTool) && ruleTool.split("__").length === 2) {
    return name.startsWith(`${ruleTool}__`);
  }
  return ruleTool === name || (_COVERS[ruleTool]?.includes(name) ?? false);
}

/**
 * Decides a call by the rules: DENY wins over ASK, which wins over ALLOW; no decision when no
 * rule concerns the call. A rule without a pattern matches every call of its tool. Patterns:
 * - `bash`: see `evaluateBash` — every command of the line is checked (after quote removal and
 *   unwrapping); a deny or ask rule applies when any command matches it, allow rules only when
 *   every command matches one. A line that cannot be parsed is never allowed by a pattern.
 * - `read`, `write`, `edit`, `ls`, `glob`, `grep`: the `path` input (ls, glob and grep default
 *   to the working directory) against a glob, see `compilePathRule`: deny and ask rules match
 *   the path as written or its real path (symlinks followed), allow rules its real path.
 * - `fetch`: the `url` input, see `matchUrl`. `web_search`: the `query`, with `*` wildcards,
 *   ignoring case. Other tools (MCP): `JSON.stringify(input)` with `*` wildcards.
 *
 * @example
 * ```ts
 * import { evaluateRules, parseRule } from "./rules.ts";
 * const rules = [
 *   parseRule("bash(git *)", "allow", "--allow"),
 *   parseRule("bash(git push *)", "ask", "--ask"),
 *   parseRule("write(dist/**)", "deny", "--deny"),
 * ];
 * const context = { cwd: "/work" };
 * const decide = async (name: string, input: unknown) =>
 *   (await evaluateRules(rules, { name, input }, context)).decision;
 * if (await decide("bash", { command: "git status" }) !== "allow") throw new Error("unexpected");
 * if (await decide("bash", { command: "git push origin" }) !== "ask") throw new Error("unexpected");
 * if (await decide("write", { path: "dist/a.js" }) !== "deny") throw new Error("unexpected");
 * if (await decide("read", { path: "dist/a.js" }) !== undefined) throw new Error("unexpected");
 * ```
 */
export async function evaluateRules(
  rules: readonly PermissionRule[],
  call: RuleCall,
  context: RuleContext,
): Promise<RuleDecision> {
  const relevant = rules.filter((rule) => ruleCoversTool(rule.tool, call.name));
  if (!relevant.length) return {};
  const input = (call.input ?? {}) as Record<string, unknown>;
  if (call.name === "bash") return await evaluateBash(relevant, String(input.command ?? ""));
  for (const kind of ["deny", "ask", "allow"] as const) {
    for (const rule of relevant.filter((rule) => rule.kind === kind)) {
      const subject = await _subject(rule, call.name, input, context);
      if (subject === undefined) continue;
      const verb = { deny: "denied by", ask: "needs approval per", allow: "allowed by" }[kind];
      const on = subject === "" ? "" : `: ${subject}`;
      return { decision: kind, rule, reason: `${verb} ${describeRule(rule)}${on}` };
    }
  }
  return {};
}

/** What the rule matched in the call ("" for a tool-level rule), or undefined when it did not. */
async function _subject(
  rule: PermissionRule,
  name: string,
  input: Record<string, unknown>,
  context: RuleContext,
): Promise<string | undefined> {
  const pattern = rule.pattern;
  if (pattern === undefined) return "";
  const text = (value: unknown) => (typeof value === "string" ? value : undefined);
  if (_PATH_TOOLS.has(name)) {
    const directory = name === "ls" || name === "glob" || name === "grep";
    const path = text(input.path) ?? (directory ? "." : undefined);
    if (path === undefined) return undefined;
    const home = pattern.startsWith("~/") ? context.home ?? homeDirectory() : undefined;
    const matches = await compilePathRule(pattern, { cwd: context.cwd, home });
    // Deny and ask rules see the path as written and its real path; allow rules, the real path.
    const written = resolve(context.cwd, path);
    const real = resolvedPath(written);
    const hit = matches(real, directory) || (rule.kind !== "allow" && matches(written, directory));
    if (!hit) return undefined;
    return real === written ? `"${path}"` : `"${path}" (${real})`;
  }
  if (name === "fetch") {
    const url = text(input.url);
    return url !== undefined && matchUrl(pattern, url) ? `"${url}"` : undefined;
  }
  if (name === "web_search") {
    const query = text(input.query);
    return query !== undefined && wildcard(pattern, { ignoreCase: true }).test(query)
      ? `"${query}"`
      : undefined;
  }
  if (name === "todo") return undefined;
  const json = JSON.stringify(input);
  return wildcard(pattern).test(json) ? json : undefined;
}
