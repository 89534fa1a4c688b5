/**
 * Permission rules that narrow what Deno grants (`--allow "bash(git *)"`,
 * `--deny "write(secrets/**)"`, `--ask "fetch(domain:example.com)"`), the permission policy that
 * applies them with a mode (`plan`, `default`, `accept-edits`) as the loop's permission callback,
 * and the Bash command-line analysis behind the `bash` rules.
 *
 * @example
 * ```ts
 * import { Agent } from "@x/agent";
 * import { evaluateRules, parseRule, permissionPolicy } from "@x/agent/permissions";
 * import { scriptedModel } from "@x/agent/testing";
 * import { createBashTool } from "@x/agent/tools";
 *
 * const rules = [parseRule("bash(rm *)", "deny", "--deny")];
 * const call = { name: "bash", input: { command: "ls && sudo rm -rf build" } };
 * const { decision } = await evaluateRules(rules, call, { cwd: "/work" });
 * if (decision !== "deny") throw new Error("unexpected");
 *
 * const agent = new Agent({
 *   model: scriptedModel([
 *     { toolCalls: [{ name: "bash", input: { command: "rm -rf build" } }] },
 *     { text: "I may not remove it." },
 *   ]),
 *   tools: [createBashTool()],
 *   permission: permissionPolicy({ rules, mode: () => "default", roots: [Deno.cwd()] }),
 * });
 * const result = await agent.run("Clean up");
 * const refused = result.messages.find((message) => message.role === "tool");
 * if (!refused?.isError) throw new Error("the call was not refused");
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
  type RuleDecision,
  type RuleKind,
} from "./rules.ts";
export { describeRule } from "./bash_rules.ts";
export {
  type PermissionAnswer,
  type PermissionMode,
  permissionPolicy,
  type PolicyOptions,
} from "./policy.ts";
export { toolChecks, type ToolChecksOptions } from "./tool_checks.ts";
export { commandsOf, parseCommandLine, type ShellCommand } from "./shell.ts";
