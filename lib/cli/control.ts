/**
 * The user's say over a CLI run: permission rules from the flags and the settings, the
 * permission mode, and the settings' hook commands.
 *
 * @module
 */

import type { Hooks } from "../hooks.ts";
import type { PermissionMode } from "../permissions/policy.ts";
import { parseRule, type PermissionRule } from "../permissions/rules.ts";
import type { Settings } from "./settings.ts";
import type { BashSandbox } from "../../tools/bash.ts";
import { type CliArgs, UsageError } from "./args.ts";
import type { CliSandbox } from "./sandbox.ts";
import { shellHooks } from "./shell_hooks.ts";

/**
 * The rules of a run: `--allow`, `--ask`, `--deny`, then the settings' lists. A rule that does
 * not parse is a usage error naming it.
 *
 * @example
 * ```ts
 * import { parseCliArgs } from "./args.ts";
 * import { rulesOf } from "./control.ts";
 * const rules = rulesOf(parseCliArgs(["--deny", "bash(rm *)", "x"]), { permissions: { allow: ["read"] } });
 * if (rules.map((rule) => rule.kind).join() !== "deny,allow") throw new Error("unexpected");
 * ```
 */
export function rulesOf(options: CliArgs, settings: Settings): PermissionRule[] {
  const rules: PermissionRule[] = [];
  const add = (
    texts: readonly string[] | undefined,
    kind: PermissionRule["kind"],
    source: string,
  ) => {
    for (const text of texts ?? []) {
      try {
        rules.push(parseRule(text, kind, source));
      } catch (error) {
        // The message names the rule and where it came from.
        throw new UsageError((error as Error).message);
      }
    }
  };
  add(options.allow, "allow", "--allow");
  add(options.ask, "ask", "--ask");
  add(options.deny, "deny", "--deny");
  add(settings.permissions?.allow, "allow", "the settings' permissions.allow");
  add(settings.permissions?.ask, "ask", "the settings' permissions.ask");
  add(settings.permissions?.deny, "deny", "the settings' permissions.deny");
  return rules;
}

/** The words added to each request in plan mode. */
export const PLAN_MODE_NOTE = "[Plan mode] Investigate with the read-only tools and propose a " +
  "plan. Do not change files or run commands: those calls are refused until the user leaves " +
  "plan mode.";

/**
 * The hooks of a run: the settings' hook commands (when Deno lets the agent run `sh`), and in
 * plan mode a note on each request that says so. The commands run in the run's sandbox as the
 * `bash` tool's do, with the agent's environment less its secrets; when the sandbox is required
 * and there is none, they are refused (and said to be, once).
 *
 * @example
 * ```ts
 * import { runHooks } from "./control.ts";
 * const hooks = runHooks({}, {
 *   cwd: ".",
 *   mode: () => "plan",
 *   warn: () => {},
 *   canRunShell: false,
 *   sandbox: { report: { kind: "none", mode: "off", reason: "turned off" } },
 * });
 * const sent = await hooks.beforeModelCall!({ turn: 1, messages: [] });
 * if (!sent || sent.length !== 1) throw new Error("unexpected");
 * ```
 */
export function runHooks(
  settings: Settings,
  options: {
    cwd: string;
    mode: () => PermissionMode;
    warn(text: string): void;
    canRunShell: boolean;
    /** The run's sandbox: what the `bash` tool runs under, and the mode it was asked for. */
    sandbox: Pick<CliSandbox, "bash" | "report">;
    /** Variables kept out of the commands whatever their names (the user's providers' keys). */
    secretNames?: readonly string[];
  },
): Hooks {
  let commands: Hooks = {};
  if (settings.hooks && Object.values(settings.hooks).some((list) => list?.length)) {
    if (options.canRunShell) {
      const { cwd, warn } = options;
      commands = shellHooks(settings.hooks, {
        cwd,
        warn,
        sandbox: _hookSandbox(options.sandbox),
        secretNames: options.secretNames,
      });
    } else {
      options.warn("the settings' hooks are skipped: Deno does not grant running sh (--allow-run)");
    }
  }
  return {
    ...commands,
    async beforeModelCall(context) {
      const messages = (await commands.beforeModelCall?.(context)) ?? context.messages;
      if (options.mode() !== "plan") {
        return messages === context.messages ? undefined : [...messages];
      }
      return [...messages, { role: "user", content: PLAN_MODE_NOTE }];
    },
  };
}

/**
 * The sandbox of hook commands: the `bash` tool's; and when the sandbox is required but none was
 * set up for `bash` (Deno does not grant running it), a refusal all the same.
 */
function _hookSandbox(sandbox: Pick<CliSandbox, "bash" | "report">): BashSandbox | undefined {
  if (sandbox.bash) return sandbox.bash;
  const { report } = sandbox;
  if (report.kind === "none" && report.mode === "required") {
    return { refuse: `The sandbox is required, but there is none: ${report.reason}.` };
  }
  return undefined;
}
