/**
 * The permission policy of a run: the rules (`--allow`, `--ask`, `--deny` and the settings'
 * lists) and the permission mode, as the loop's permission callback. It only narrows what Deno
 * grants: a tool Deno does not grant is never offered in the first place.
 *
 * @module
 */

import type { PermissionCallback, PermissionDecision, PermissionRequest } from "../hooks.ts";
import { basename, dirname, join, resolve } from "node:path";
import { isInside } from "../files/inside.ts";
import { evaluateRules, parseRule, type PermissionRule } from "./rules.ts";
import { parseCommandLine } from "./shell.ts";
import { toolChecks } from "./tool_checks.ts";
import { protectedWriteCheck, protectedWriteRefusal } from "./protected_writes.ts";

/**
 * How much the agent may do without asking: `plan` only looks (read-only tools) and proposes;
 * `default` asks before changing anything in an interactive session; `accept-edits` also lets
 * file edits inside the workspace through without asking.
 */
export type PermissionMode = "plan" | "default" | "accept-edits";

/** The permission modes, in order. */
export const PERMISSION_MODES: readonly PermissionMode[] = ["plan", "default", "accept-edits"];

/** The tools that only look: the only ones plan mode lets run. */
export const READ_ONLY_TOOLS: ReadonlySet<string> = new Set([
  "read",
  "ls",
  "glob",
  "grep",
  "fetch",
  "web_search",
  "todo",
]);

const EDIT_TOOLS = new Set(["write", "edit"]);

/**
 * A person's answer to "may the agent do this?": `yes` or `no` this once, `always` (allow rules
 * added for the rest of the session) or `never` (deny rules added likewise).
 */
export type PermissionAnswer = "yes" | "no" | "always" | "never";

/** Options of {@link permissionPolicy}. */
export interface PolicyOptions {
  /** The rules, in any order (deny wins over ask over allow). */
  rules: PermissionRule[];
  /** The mode now; a function, so that the interactive session can switch it. */
  mode: () => PermissionMode;
  /** Asks the person; absent in headless runs, where "ask" means "deny". */
  ask?: (request: PermissionRequest, why: string) => Promise<PermissionAnswer>;
  /** The workspace roots (for accept-edits). */
  roots: readonly string[];
  /**
   * Directories the file tools never change, whatever the rules and the mode: the agent's own
   * settings and data (a model that rewrote them could trust every project, or widen its rules).
   */
  protected?: readonly string[];
}

/**
 * The permission callback for a set of rules and a mode.
 *
 * @example
 * ```ts
 * import { parseRule } from "./rules.ts";
 * import { permissionPolicy } from "./policy.ts";
 * const policy = permissionPolicy({
 *   rules: [parseRule("bash(rm *)", "deny", "--deny")],
 *   mode: () => "default",
 *   roots: ["/work"],
 * });
 * const decision = await policy({
 *   call: { type: "tool_call", id: "1", name: "bash", input: { command: "ls && rm -rf x" } },
 *   tool: { name: "bash", description: "", inputSchema: {}, capabilities: ["run"], execute: () => "" },
 *   cwd: "/work",
 *   signal: new AbortController().signal,
 * });
 * if (decision.behavior !== "deny") throw new Error("unexpected");
 * ```
 */
export function permissionPolicy(options: PolicyOptions): PermissionCallback {
  const rules = options.rules;
  // The calls the user let through when asked: what ask rules cover is theirs to touch.
  const approved = new Set<string>();
  const policy: PermissionCallback = async (request) => {
    const { call, cwd } = request;
    const guarded = EDIT_TOOLS.has(call.name) ? _protectedTarget(request, options.protected) : "";
    if (guarded) {
      return _deny(
        `${guarded} holds the agent's own settings or data, which it does not change: the user ` +
          `changes them, if at all`,
      );
    }
    const mode = options.mode();
    if (mode === "plan" && !READ_ONLY_TOOLS.has(call.name)) {
      return _deny(
        `plan mode only looks: "${call.name}" would change something. Propose the change ` +
          `instead; it can be made once the user leaves plan mode.`,
      );
    }
    const verdict = await evaluateRules(rules, call, { cwd });
    if (verdict.decision === "deny") return _deny(verdict.reason ?? "denied by a rule");
    // Files that would run code outside the sandbox change only under a rule that names them.
    const refusal = await protectedWriteRefusal(request, rules);
    if (refusal) return _deny(refusal);
    if (verdict.decision === "allow") return { behavior: "allow" };
    if (verdict.decision === "ask") return await _ask(verdict.reason ?? "a rule asks", request);
    // No rule: the mode decides. Looking never needs asking; headless runs go by Deno's grants.
    if (READ_ONLY_TOOLS.has(call.name) || !options.ask) return { behavior: "allow" };
    if (
      mode === "accept-edits" && EDIT_TOOLS.has(call.name) && _inWorkspace(request, options.roots)
    ) {
      return { behavior: "allow" };
    }
    return await _ask(`"${call.name}" changes things`, request);
  };
  // What the allowed call's tool actually touches meets the same rules.
  policy.checks = async (request) => {
    const checks = await toolChecks(rules, request.call, {
      cwd: request.cwd,
      approved: approved.delete(request.call.id),
    });
    // And what it opens to change is no protected file it was not explicitly allowed.
    const guard = await protectedWriteCheck(request, rules);
    const byRules = checks.checkPath;
    return {
      ...checks,
      checkPath: (path, access) => guard(path, access) ?? byRules?.(path, access),
    };
  };
  return policy;

  async function _ask(why: string, request: PermissionRequest): Promise<PermissionDecision> {
    if (!options.ask) {
      return _deny(`${why}, and nobody can answer in a headless run (allow it with --allow)`);
    }
    const answer = await options.ask(request, why);
    if (answer === "never") {
      // Each rule "always" would add, as a deny rule: asked again, the answer stands.
      const refused = await alwaysRules(request);
      rules.push(...refused.map((rule) => parseRule(rule.text, "deny", "an answer of never")));
      return _deny("the user said no, and not to ask again in this session");
    }
    if (answer === "no") return _deny("the user said no");
    if (answer === "always") rules.push(...await alwaysRules(request));
    approved.add(request.call.id);
    return { behavior: "allow" };
  }
}

/**
 * The allow rules an "always" answer adds for the rest of the session: for `bash`, one rule per
 * command of the line, exactly as run (a command with a `*` in it, which a rule cannot say
 * exactly, gets none, nor does a shell fed its program as data); for the other tools, the tool.
 *
 * @example
 * ```ts
 * import { alwaysRules } from "./policy.ts";
 * const rules = await alwaysRules({
 *   call: { type: "tool_call", id: "1", name: "bash", input: { command: "git add . && git status" } },
 * } as never);
 * if (rules.map((rule) => rule.text).join() !== "bash(git add .),bash(git status)") {
 *   throw new Error(rules.map((rule) => rule.text).join());
 * }
 * ```
 */
export async function alwaysRules(request: PermissionRequest): Promise<PermissionRule[]> {
  const { name, input } = request.call;
  const source = "an answer of always";
  if (name !== "bash") return [parseRule(name, "allow", source)];
  const command = (input as { command?: unknown })?.command;
  const commands = typeof command === "string" ? await parseCommandLine(command) : undefined;
  return (commands ?? [])
    // A shell fed its program as data, or a command not known from the text, gets none.
    .filter((found) => !found.opaque && !found.fromData)
    .map((found) => found.words.join(" "))
    .filter((text) => text && !/[*()]/.test(text))
    .map((text) => parseRule(`bash(${text})`, "allow", source));
}

/** The protected directory a file tool's path lies in (its real path), or "". */
function _protectedTarget(request: PermissionRequest, dirs: readonly string[] = []): string {
  const path = (request.call.input as { path?: unknown } | undefined)?.path;
  if (typeof path !== "string" || dirs.length === 0) return "";
  const target = _real(resolve(request.cwd, path));
  return dirs.find((dir) => isInside(target, _real(dir))) ?? "";
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

function _deny(reason: string): PermissionDecision {
  return { behavior: "deny", reason };
}

function _inWorkspace(request: PermissionRequest, roots: readonly string[]): boolean {
  const path = (request.call.input as { path?: unknown })?.path;
  if (typeof path !== "string") return false;
  const target = resolve(request.cwd, path);
  return roots.some((root) => isInside(target, resolve(request.cwd, root)));
}
