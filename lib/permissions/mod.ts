/**
 * Permission rules that narrow what Deno grants (`--allow "bash(git *)"`,
 * `--deny "write(secrets/**)"`, `--ask "fetch(domain:example.com)"`), and the Bash command-line
 * analysis behind the `bash` rules.
 *
 * @example
 * ```ts
 * import { evaluateRules, parseRule } from "./mod.ts";
 * const rules = [parseRule("bash(rm *)", "deny", "--deny")];
 * const call = { name: "bash", input: { command: "ls && sudo rm -rf build" } };
 * const { decision } = await evaluateRules(rules, call, { cwd: "/work" });
 * if (decision !== "deny") throw new Error("unexpected");
 * ```
 *
 * @module
 */

export {
  evaluateRules,
  parseRule,
  type PermissionRule,
  type RuleCall,
  type RuleContext,
  ruleCoversTool,
  type RuleDecision,
  type RuleKind,
} from "./rules.ts";
export { describeRule, evaluateBash } from "./bash_rules.ts";
export {
  commandPattern,
  matchPath,
  matchUrl,
  normalHost,
  type PathContext,
  wildcard,
} from "./match.ts";
export {
  compilePathRule,
  type PathMatcher,
  type PathRuleContext,
  resolvedPath,
} from "./path_rules.ts";
export { toolChecks, type ToolChecksOptions } from "./tool_checks.ts";
export { commandsOf, parseCommandLine, type ShellCommand } from "./shell.ts";
