/**
 * A bubblewrap sandbox for the processes the agent starts (the `bash` tool, MCP stdio servers):
 * read-only file system but for the workspace, secrets hidden, no network, nothing outliving
 * the call.
 *
 * @example
 * ```ts
 * import { detectSandbox, resolveSandbox } from "./mod.ts";
 * const found = await detectSandbox({ path: "/nonexistent/bwrap" });
 * const decision = resolveSandbox({ mode: "off" }, found);
 * if (decision.use) throw new Error("unexpected");
 * ```
 *
 * @module
 */

export {
  SANDBOX_HIDDEN_HOME,
  SANDBOX_HIDDEN_SYSTEM,
  sandboxArgs,
  type SandboxArgsOptions,
} from "./bubblewrap.ts";
export { detectSandbox, type DetectSandboxOptions, type SandboxAvailability } from "./detect.ts";
export { SANDBOX_STRIPPED_ENV, sandboxEnv } from "./env.ts";
export {
  resolveSandbox,
  type SandboxDecision,
  type SandboxPolicy,
  type SandboxReport,
} from "./policy.ts";
