/**
 * Whether commands run in the sandbox: the user's choice (`--sandbox auto|required|off`) against
 * what {@link detectSandbox} found.
 *
 * @module
 */

import type { SandboxReport } from "../events.ts";
import type { SandboxAvailability } from "./detect.ts";

export type { SandboxReport };

/** What the user asks of the sandbox. */
export interface SandboxPolicy {
  /**
   * `auto`: use it when available, else run without it after a warning; `required`: refuse to
   * run commands without it; `off`: never use it.
   */
  mode: "auto" | "required" | "off";
  /** Directories writable besides the workspace roots, e.g. a cache. */
  writable?: string[];
  /** Whether commands keep the network (default false). */
  net?: boolean;
}

/** What {@link resolveSandbox} decides. */
export interface SandboxDecision {
  /** Whether commands run in the sandbox. */
  use: boolean;
  /** Said once, when commands run without the sandbox that `auto` would have used. */
  warning?: string;
  /** Set when commands must not run at all (`required` without a sandbox): the reason. */
  refuse?: string;
}

/** How to get bubblewrap, for the messages. */
const _INSTALL = "install bubblewrap (apt-get install bubblewrap)";

/**
 * Decides from the policy and the availability: `off` never uses the sandbox; `auto` uses it
 * when available and otherwise gives a warning to show once; `required` uses it or gives the
 * refusal every command should fail with. Both say what to do: the availability's `fix` when it
 * has one (a Deno flag to add), else install bubblewrap.
 *
 * @example
 * ```ts
 * import { resolveSandbox } from "./policy.ts";
 * const missing = { available: false, reason: "bubblewrap is not installed" } as const;
 * const auto = resolveSandbox({ mode: "auto" }, missing);
 * if (auto.use || !auto.warning?.startsWith("commands run without a sandbox")) {
 *   throw new Error("unexpected");
 * }
 * const required = resolveSandbox({ mode: "required" }, missing);
 * if (required.use || !required.refuse?.includes("apt-get install bubblewrap")) {
 *   throw new Error("unexpected");
 * }
 * const denied = { available: false, reason: "no grant", fix: "add --allow-run=bwrap" } as const;
 * if (!resolveSandbox({ mode: "auto" }, denied).warning?.includes("; add --allow-run=bwrap or")) {
 *   throw new Error("unexpected");
 * }
 * ```
 */
export function resolveSandbox(
  policy: SandboxPolicy,
  availability: SandboxAvailability,
): SandboxDecision {
  if (policy.mode === "off") return { use: false };
  if (availability.available) return { use: true };
  // What is known to be missing (a Deno grant, the kernel's namespaces), else bubblewrap itself.
  const fix = availability.fix;
  if (policy.mode === "required") {
    return {
      use: false,
      refuse: `The sandbox is required, but ${availability.reason}: ` +
        (fix ?? `${_INSTALL} and make sure user namespaces are enabled`) +
        `, or set --sandbox auto or off to run commands without it.`,
    };
  }
  return {
    use: false,
    warning: `commands run without a sandbox: ${availability.reason}; ${fix ?? _INSTALL} or ` +
      `set --sandbox off to silence this`,
  };
}
